# shellcheck shell=bash
# harness.sh - sourced by payhook's integration and end-to-end test scripts,
# the benchmarks, the soak and chaos: the local server harness of
# tools/harness.sh (redis-server, mariadbd, payhook pools, lighttpd; its
# header lists every public function and setting) and the servers only the
# tests start: TCP proxies and silent listeners (proxy.sh), MariaDB Galera
# clusters (galera.sh), Redis Sentinels (sentinel.sh). harness-ctl.sh lets a
# C test program drive them mid-test.
#
#   . "$top_srcdir/tests/lib/harness.sh"
#   harness_init || exit 99          # temp folder + cleanup trap on EXIT
#   harness_start_redis || exit 99   # exports REDIS_PORT, PAYHOOK_REDIS_*
#   harness_start_mariadb || exit 99 # exports MYSQL_*, PAYHOOK_MYSQL_*

if [ -z "${top_srcdir:-}" ]; then
	top_srcdir=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
fi
# shellcheck source=../../tools/harness.sh
. "$top_srcdir/tools/harness.sh" || return 1
# shellcheck source=proxy.sh
. "$top_srcdir/tests/lib/proxy.sh" || return 1
# shellcheck source=galera.sh
. "$top_srcdir/tests/lib/galera.sh" || return 1
# shellcheck source=sentinel.sh
. "$top_srcdir/tests/lib/sentinel.sh" || return 1
