#!/bin/bash
# build-deb.sh - builds the Debian package from a "make dist" tarball:
# unpacks it in OUT/build (default $BUILD_DIR/deb), runs dpkg-buildpackage
# -us -uc -b there and moves the .deb, .changes and .buildinfo to OUT; then
# lintian checks them when it is installed (an error or a warning fails).
#
#   bash packaging/debian/build-deb.sh TARBALL [OUT]
#
# DEB_PREPARE, when set, is a shell command run in the unpacked tree before
# the build (make check-deb changes the tree there to build an upgrade).
set -euo pipefail

tarball=${1:?usage: build-deb.sh TARBALL [OUT]}
out=${2:-${BUILD_DIR:-$PWD}/deb}
for tool in dpkg-buildpackage dh; do
	command -v "$tool" >/dev/null || {
		echo "build-deb: needs $tool (sh packaging/install-deps.sh)" >&2
		exit 1
	}
done
mkdir -p "$out"
out=$(cd "$out" && pwd)
build=$out/build
rm -rf "$build"
mkdir -p "$build"
tar -xzf "$tarball" -C "$build"
src=$(find "$build" -mindepth 1 -maxdepth 1 -type d | head -n 1)
[ -f "$src/debian/control" ] || { echo "build-deb: no debian/ in $tarball" >&2; exit 1; }
if [ -n "${DEB_PREPARE:-}" ]; then
	(cd "$src" && bash -c "$DEB_PREPARE")
fi
(cd "$src" && dpkg-buildpackage -us -uc -b) >"$out/build.log" 2>&1 || {
	tail -n 30 "$out/build.log" >&2
	echo "build-deb: dpkg-buildpackage failed (the whole log is $out/build.log)" >&2
	exit 1
}
changes=
for f in "$build"/*.deb "$build"/*.changes "$build"/*.buildinfo; do
	[ -e "$f" ] || continue
	mv -f "$f" "$out/"
	case $f in *.changes) changes=$out/$(basename "$f") ;; esac
done
rm -rf "$build"
ls -1 "$out"/*.deb
if command -v lintian >/dev/null; then
	# Errors and warnings fail; info and pedantic tags are shown.
	lintian --info --display-level '>=info' "$changes" | tee "$out/lintian.txt"
	if grep -qE '^[EW]: ' "$out/lintian.txt"; then
		echo "build-deb: lintian reports errors or warnings (above)" >&2
		exit 1
	fi
else
	echo "build-deb: lintian is not installed: the package was not checked" >&2
fi
