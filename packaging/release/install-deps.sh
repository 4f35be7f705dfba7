#!/bin/sh
# install-deps.sh - what "make release" and "make check-release" need beyond
# packaging/install-deps.sh (Debian 12, as root): debootstrap builds the bare
# host's root; objdump (binutils, with build-essential already) checks what
# the binaries load. Kept apart so that the test command installs no more
# than the tests use.
set -eu
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq
apt-get install -y -qq --no-install-recommends debootstrap binutils curl >/dev/null
