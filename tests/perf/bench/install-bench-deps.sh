#!/bin/sh
# install-bench-deps.sh - installs what "make bench" needs beyond the test
# suite's packages (packaging/install-deps.sh): PHP 8.2 under PHP-FPM with
# phpredis, mysqli (mysqlnd) and OPcache, for the PHP-FPM peer that the
# benchmark measures beside payhook (tests/perf/bench/php/). Debian 12, as root;
# "make bench-deps" runs it. The test command never needs these.
#
# The bench starts its own php-fpm on a unix socket in its temporary folder,
# so the package's system service is kept from starting during the install
# (a policy-rc.d that exists only for this install), and it is left disabled.
set -eu
packages="php8.2-fpm php8.2-cli php8.2-opcache php8.2-mysql php8.2-redis"

policy=/usr/sbin/policy-rc.d
own_policy=no
if [ ! -e "$policy" ]; then
	printf '#!/bin/sh\n# payhook bench install: no service starts during the install\nexit 101\n' >"$policy"
	chmod 755 "$policy"
	own_policy=yes
fi
cleanup() {
	if [ "$own_policy" = yes ]; then rm -f "$policy"; fi
}
trap cleanup EXIT
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq
# shellcheck disable=SC2086 # the package list is split on purpose
apt-get install -y -qq --no-install-recommends $packages >/dev/null
# The bench runs php-fpm by hand; the package's service stays off.
if command -v systemctl >/dev/null 2>&1; then
	systemctl disable php8.2-fpm >/dev/null 2>&1 || true
fi
fpm=$(command -v php-fpm8.2 || true)
[ -n "$fpm" ] || fpm=/usr/sbin/php-fpm8.2
"$fpm" -v | head -n 1
php8.2 -m | grep -Eix 'redis|mysqli|mysqlnd|zend opcache' | tr '\n' ' '
printf '\n'
