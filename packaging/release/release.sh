#!/bin/bash
# release.sh - writes payhook-VERSION-linux-x86_64.tar.gz, what a shared-host
# user downloads: payhook, payhook-sign, payhook-dispatch and
# payhook-reconcile linked so that
# they need only the C library, the wrappers for mod_fcgid and plain CGI,
# the .htaccess files, the schema, the example configurations, INSTALL,
# README.md, doc/ and SHA256SUMS.
#
#   release.sh bullseye   "make release": built from "make dist" in a Debian
#                         11 root (as root; static-deps.sh says why), so the
#                         binaries run on glibc 2.28 and newer
#   release.sh host       "make release-host": built on this machine, so they
#                         need this machine's glibc (2.34 on Debian 12); this
#                         build's binaries if it is --enable-static-deps,
#                         else a static build from "make dist"; without
#                         payhook-dispatch and payhook-reconcile, since
#                         Debian 12's libcurl.a needs
#                         libraries Debian ships no static archive of
#                         (Kerberos, OpenLDAP, nghttp2...)
#
# Run by make with BUILD_DIR, SRC_DIR, VERSION and STATIC_DEPS. Either way it
# fails unless every shared library the binaries load is part of glibc, and
# it prints their size and the oldest glibc they run on.
set -euo pipefail

: "${BUILD_DIR:?}" "${SRC_DIR:?}" "${VERSION:?}" "${STATIC_DEPS:=no}"
on=${1:?usage: release.sh bullseye|host}
make=${MAKE:-make}
here=$(cd "$(dirname "$0")" && pwd)
name=payhook-$VERSION-linux-x86_64
dist=payhook-$VERSION
work=$(mktemp -d "${TMPDIR:-/tmp}/payhook-release.XXXXXX")
chmod 755 "$work"
trap 'rm -rf "$work"' EXIT
progs="app/payhook app/payhook-sign"

case $on in
bullseye)
	if [ "$(id -u)" -ne 0 ]; then
		echo "release: building in a Debian 11 root needs root (debootstrap, chroot);" \
			"make release-host builds on this machine without" >&2
		exit 1
	fi
	# Debian 11's compiler and glibc; every library from Debian 12's
	# sources, in /opt/deps (static-deps.sh), libcurl included: no
	# libcurl of Debian 11 is in the root, so none can be linked instead.
	root_tar=$(bash "$here/debian-root.sh" bullseye "build-essential pkg-config
		autoconf automake libtool cmake perl dpkg-dev xz-utils zlib1g-dev" \
		"$here/static-deps.sh")
	"$make" -C "$BUILD_DIR" dist-gzip >/dev/null
	echo "release: building in a copy of the Debian 11 root, in $work/root"
	mkdir "$work/root"
	tar -C "$work/root" -xf "$root_tar"
	tar -C "$work/root/tmp" -xzf "$BUILD_DIR/$dist.tar.gz"
	# None of this machine's environment inside (see debian-root.sh).
	# configure asks pkg-config for libcurl's shared link line; the
	# static one adds OpenSSL's. libcurl, libssl and libcrypto are only
	# archives in /opt/deps, and the root has no -dev package of them.
	progs="$progs app/payhook-dispatch app/payhook-reconcile"
	chroot "$work/root" env -i PATH=/usr/bin:/bin HOME=/root \
		PKG_CONFIG_PATH=/opt/deps/lib/pkgconfig sh -c "cd /tmp/$dist &&
		./configure -q --enable-static-deps CPPFLAGS=-I/opt/deps/include \
			CURL_LIBS=\"\$(pkg-config --static --libs libcurl)\" &&
		make -j2 $progs" >"$work/build.log" 2>&1 || {
		tail -n 30 "$work/build.log" >&2
		exit 1
	}
	bin=$work/root/tmp/$dist/app
	;;
host)
	if [ "$STATIC_DEPS" = yes ]; then
		# shellcheck disable=SC2086 # two targets
		"$make" -C "$BUILD_DIR" $progs >/dev/null
		bin=$BUILD_DIR/app
	else
		echo "release: a static build from the source tarball in $work"
		"$make" -C "$BUILD_DIR" dist-gzip >/dev/null
		tar -C "$work" -xzf "$BUILD_DIR/$dist.tar.gz"
		# shellcheck disable=SC2086 # two targets
		(cd "$work/$dist" && ./configure -q --enable-static-deps &&
		 "$make" -j2 $progs >/dev/null)
		bin=$work/$dist/app
	fi
	echo "release: without payhook-dispatch and payhook-reconcile (make" \
		"release builds them: libcurl" \
		"from source, since Debian 12's libcurl.a needs libraries that have" \
		"no static archive)" >&2
	;;
*)
	echo "usage: release.sh bullseye|host" >&2
	exit 2
	;;
esac

# The promise of the release: nothing but glibc is loaded (before 2.34,
# libpthread and libdl were files of their own), and the oldest glibc that
# has every versioned symbol the binaries use is the one they need.
names=$(for prog in $progs; do basename "$prog"; done)
floor=0
for prog in $names; do
	for lib in $(objdump -p "$bin/$prog" | awk '/NEEDED/ { print $2 }'); do
		case $lib in
		libc.so.6 | ld-linux-x86-64.so.2 | libdl.so.2 | libpthread.so.0 | libm.so.6 | librt.so.1) ;;
		*)
			echo "release: $prog needs $lib, which is not part of the C library" >&2
			exit 1
			;;
		esac
	done
	f=$(objdump -T "$bin/$prog" | grep -o 'GLIBC_[0-9.]*' | sort -uV | tail -n 1)
	floor=$(printf '%s\n%s\n' "$floor" "${f#GLIBC_}" | sort -V | tail -n 1)
done

stage=$work/$name
mkdir -p "$stage/conf" "$stage/db" "$stage/doc"
for prog in $names; do
	strip -o "$stage/$prog" "$bin/$prog"
	chmod 0755 "$stage/$prog"
done
install -m 0755 "$SRC_DIR/conf/payhook.fcgi" "$SRC_DIR/conf/payhook.cgi" "$stage/"
sed -e "s/payhook-VERSION-linux-x86_64/$name/g" -e "s/@GLIBC@/$floor/g" \
	"$here/INSTALL-shared-hosting.txt" >"$stage/INSTALL"
install -m 0644 "$SRC_DIR/README.md" "$stage/"
install -m 0644 "$SRC_DIR"/doc/*.md "$stage/doc/"
install -m 0644 "$SRC_DIR/conf/payhook.conf.example" \
	"$SRC_DIR/conf/shared-hosting.conf.example" \
	"$SRC_DIR/conf/htaccess.example" "$SRC_DIR/conf/htaccess-cgi.example" \
	"$stage/conf/"
install -m 0644 "$SRC_DIR"/db/*.sql "$stage/db/"
chmod 0644 "$stage/INSTALL"
(cd "$stage" && find . -type f -printf '%P\n' | sort | xargs sha256sum) >"$work/sums"
mv "$work/sums" "$stage/SHA256SUMS"

# Owned by nobody in particular, files in a fixed order: the user's unpack
# makes them theirs, and two builds of one commit list the same files.
out=$BUILD_DIR/$name.tar.gz
tar -C "$work" --sort=name --owner=0 --group=0 --numeric-owner \
	-czf "$out.tmp" "$name"
mv "$out.tmp" "$out"
echo "release: $out (built on $on)"
for prog in $names; do
	echo "release: $prog $(stat -c %s "$stage/$prog") bytes (stripped)"
done
echo "release: they load only the C library and need glibc $floor or newer"
echo "release: sha256 $(sha256sum "$out" | cut -d' ' -f1)"
