#!/bin/bash
# harness-ctl.sh - lets a C test program control, mid-test, the servers its
# test script started with tests/lib/harness.sh (folder named by $HARNESS_DIR).
#
#   harness-ctl.sh stop-mariadb | start-mariadb | stop-redis | start-redis
#   harness-ctl.sh pause-mariadb | resume-mariadb | pause-redis | resume-redis
#   harness-ctl.sh sql "SQL"          rows on stdout, tab-separated
#   harness-ctl.sh redis ARGS...      redis-cli output on stdout
#   harness-ctl.sh start-redis NAME | stop-redis NAME        another redis
#   harness-ctl.sh start-mariadb NAME | stop-mariadb NAME    another mariadb
#   harness-ctl.sh sql-on NAME "SQL" | redis-on NAME ARGS... on server NAME
#   harness-ctl.sh start-proxy NAME HOST:PORT   a tcpproxy (PROXY_PORT_<NAME>)
#   harness-ctl.sh proxy NAME COMMAND...        its reply on stdout
#
# start-* restarts on the same port and datadir; stop-* sends SIGTERM to the
# recorded PID and returns once the process is gone. A server or proxy
# started here for the first time prints its port ("# harness: ... on
# 127.0.0.1:PORT") and gets its line in $HARNESS_DIR/env (REDIS_PORT_<NAME>,
# MYSQL_PORT_<NAME>, MYSQL_SOCKET_<NAME>, PROXY_PORT_<NAME>). Exits 0 on
# success, non-zero with a message on stderr otherwise. It never cleans up:
# the test script that called harness_init owns the servers and the folder.

usage() {
	printf 'usage:\n' >&2
	sed -n '5,13s/^#//p' "$0" >&2
	exit 2
}

# shellcheck source-path=SCRIPTDIR source=harness.sh
. "$(dirname "$0")/harness.sh" || exit 1
harness_attach || exit 1

[ "$#" -ge 1 ] || usage
command=$1
shift
case $command in
start-mariadb | stop-mariadb | start-redis | stop-redis)
	[ "$#" -le 1 ] || usage
	"harness_${command%%-*}_${command#*-}" "$@"
	;;
pause-mariadb | resume-mariadb | pause-redis | resume-redis)
	[ "$#" -eq 0 ] || usage
	"harness_${command%%-*}" "${command#*-}"
	;;
sql)
	[ "$#" -eq 1 ] || usage
	harness_sql "$1"
	;;
redis)
	[ "$#" -ge 1 ] || usage
	harness_redis "$@"
	;;
sql-on)
	[ "$#" -eq 2 ] || usage
	harness_sql_on "$1" "$2"
	;;
redis-on)
	[ "$#" -ge 2 ] || usage
	harness_redis_on "$@"
	;;
start-proxy)
	[ "$#" -eq 2 ] || usage
	harness_start_proxy "$1" "$2"
	;;
proxy)
	[ "$#" -ge 2 ] || usage
	harness_proxy "$@"
	;;
*)
	usage
	;;
esac
rc=$?
if [ "$rc" -ne 0 ]; then
	printf 'harness-ctl.sh: %s failed (exit status %s)\n' "$command" "$rc" >&2
fi
exit "$rc"
