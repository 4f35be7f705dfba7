#!/bin/bash
# debian-root.sh - prints the path of a tarball holding a minimal Debian root
# (debootstrap) with PACKAGES installed and, optionally, SETUP run inside it.
# The release scripts unpack a fresh copy of it for every run.
#
#   bash packaging/release/debian-root.sh SUITE "PACKAGES" [SETUP]   (as root)
#
#   bare bookworm root: the shared host of check-release.sh
#   bullseye root + static-deps.sh: where release.sh builds the binaries
#
# debootstrap, the packages and a SETUP that compiles take minutes, so each
# root is built once and kept in $HARNESS_CACHE (default
# /var/cache/payhook-test), named after a hash of what goes in it: changing
# the suite, the packages or the SETUP script builds a new one.
set -euo pipefail

suite=${1:?usage: debian-root.sh SUITE PACKAGES [SETUP]}
# One line, whatever white space the caller wrote the list with.
packages=$(printf '%s' "${2:?usage: debian-root.sh SUITE PACKAGES [SETUP]}" | tr -s ' \t\n' ' ')
setup=${3:-}
mirror=${DEBIAN_MIRROR:-http://deb.debian.org/debian}
cache=${HARNESS_CACHE:-/var/cache/payhook-test}
key=$({ printf '%s\n' "$suite" "$mirror" "$packages"; [ -z "$setup" ] || cat "$setup"; } |
	sha256sum | cut -c1-12)
tarball=$cache/$suite-$key.tar

if [ -s "$tarball" ]; then
	echo "$tarball"
	exit 0
fi
command -v debootstrap >/dev/null || {
	echo "debian-root: needs debootstrap (sh packaging/release/install-deps.sh)" >&2
	exit 1
}
mkdir -p "$cache"
root=$(mktemp -d "$cache/build.XXXXXX")
log=$root.log
# mktemp makes it 0700: apt's _apt user, and later Apache's www-data, must
# be able to enter /.
chmod 755 "$root"
cleanup() {
	# Never remove the root while /proc is mounted in it.
	if ! mountpoint -q "$root/proc" || umount "$root/proc"; then
		rm -rf "$root" "$log"
	fi
}
trap cleanup EXIT
fail() {
	tail -n 20 "$log" >&2
	echo "debian-root: $1 failed (the whole log was $log)" >&2
	exit 1
}

echo "debian-root: $suite with $packages, once, into $root (minutes)" >&2
debootstrap --variant=minbase "$suite" "$root" "$mirror" >"$log" 2>&1 ||
	fail debootstrap
# No service may start inside the root while its packages install: the
# tests start Apache and MariaDB themselves, on ports of their own.
printf '#!/bin/sh\nexit 101\n' >"$root/usr/sbin/policy-rc.d"
chmod 755 "$root/usr/sbin/policy-rc.d"
mount -t proc proc "$root/proc"
# Inside, none of this machine's environment: LIBRARY_PATH, CPATH and the
# like would steer the root's compiler and makefiles to this machine's files.
in_root() {
	chroot "$root" env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin HOME=/root \
		DEBIAN_FRONTEND=noninteractive "$@"
}
# shellcheck disable=SC2086 # the package list is split on purpose
in_root sh -c \
	"apt-get update -qq && apt-get install -y -qq --no-install-recommends $packages" \
	>>"$log" 2>&1 || fail "apt-get install"
if [ -n "$setup" ]; then
	cp "$setup" "$root/tmp/setup.sh"
	in_root sh /tmp/setup.sh >>"$log" 2>&1 ||
		fail "$(basename "$setup")"
	rm -f "$root/tmp/setup.sh"
fi
in_root apt-get clean
umount "$root/proc"
rm -rf "$root/var/lib/apt/lists/"*
tar -C "$root" -cf "$tarball.tmp" .
mv "$tarball.tmp" "$tarball"
echo "$tarball"
