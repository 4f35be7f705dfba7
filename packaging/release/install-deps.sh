#!/bin/sh
# install-deps.sh - what "make release", "make check-release" and "make
# check-deb" need beyond packaging/install-deps.sh (Debian 12, as root):
# debootstrap builds the Debian roots they use; objdump (binutils, with
# build-essential already) checks what the release's binaries load;
# systemd-nspawn (systemd-container) boots check-deb's root with systemd.
# Kept apart so that the test command installs no more than the tests use.
set -eu
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq
apt-get install -y -qq --no-install-recommends debootstrap binutils curl \
	systemd-container >/dev/null
