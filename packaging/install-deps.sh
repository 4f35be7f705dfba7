#!/bin/sh
# Installs what payhook needs to build and to run its tests and demo, from
# Debian's packages (Debian 12, as root). The tests start their own servers
# on loopback ports, so the packages' system services are kept from starting
# during the install (a policy-rc.d that exists only for this install).
set -eu
packages="build-essential autoconf automake pkg-config
  libfcgi-dev libhiredis-dev libjson-c-dev libssl-dev libmariadb-dev zlib1g-dev check
  redis-server mariadb-server mariadb-client lighttpd spawn-fcgi
  apache2 libapache2-mod-fcgid nginx-light curl valgrind wrk gnuplot-nox
  libcurl4-openssl-dev jq socat openssl
  galera-4 rsync chromium tidy
  debhelper dpkg-dev lintian mandoc man-db"

policy=/usr/sbin/policy-rc.d
own_policy=no
if [ ! -e "$policy" ]; then
	printf '#!/bin/sh\n# payhook install: no service starts during the install\nexit 101\n' >"$policy"
	chmod 755 "$policy"
	own_policy=yes
fi
cleanup() {
	if [ "$own_policy" = yes ]; then rm -f "$policy"; fi
}
trap cleanup EXIT
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq
# The interop tests run the payment providers' own npm libraries: Node.js
# from Debian when the machine has none.
if ! command -v node >/dev/null 2>&1 || ! command -v npm >/dev/null 2>&1; then
	packages="$packages nodejs npm"
fi
# shellcheck disable=SC2086 # the package list is split on purpose
apt-get install -y -qq --no-install-recommends $packages >/dev/null
