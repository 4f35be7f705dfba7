# shellcheck shell=bash
# harness.sh - sourced by payhook's integration and end-to-end test scripts,
# the benchmarks, the soak and the demo: starts real redis-server and mariadbd
# (one or more of each), TCP proxies, spawn-fcgi pools and lighttpd in a
# temporary folder on loopback ports chosen by the kernel, and stops them (by
# PID, only those it started) on exit.
#
#   . "$top_srcdir/tests/lib/harness.sh"
#   harness_init || exit 99          # temp folder + cleanup trap on EXIT
#   harness_start_redis || exit 99   # exports REDIS_PORT, PAYHOOK_REDIS_*
#   harness_start_mariadb || exit 99 # exports MYSQL_*, PAYHOOK_MYSQL_*
#   harness_sql "SELECT COUNT(*) FROM payments"
#
# Every function prints why on stderr and returns non-zero when it fails; stdout
# only gets one "# harness: ..." line per server started. The library works
# with and without set -euo pipefail: the functions turn errexit off inside
# (local -) and report failure by their status. NAME arguments that become
# part of a variable name (servers, proxies, silent listeners) are letters,
# digits and _, not starting with a digit.
#
# Public functions:
#   harness_init                 make HARNESS_DIR, install the cleanup traps
#   harness_cleanup              stop every process recorded, remove HARNESS_DIR
#                                (kept when HARNESS_KEEP=1); runs on EXIT
#   harness_attach               use the servers of an existing HARNESS_DIR
#                                (what tests/lib/harness-ctl.sh does)
#   harness_export_env           write the environment to $HARNESS_DIR/env
#   harness_start_redis [NAME]   start redis-server, or restart it on its port;
#                                NAME (default redis) starts another one
#   harness_stop_redis [NAME]    stop it (TERM, wait until gone)
#   harness_redis ARGS...        redis-cli against the default redis
#   harness_redis_on NAME ARGS...
#                                redis-cli against redis NAME
#   harness_start_mariadb [NAME] start mariadbd (installed, database, users and
#                                db/schema.sql loaded the first time), or
#                                restart it on the same port and datadir;
#                                NAME (default mariadb) starts another one
#   harness_stop_mariadb [NAME]  stop it (TERM, wait until gone)
#   harness_sql "SQL"            run SQL as the admin account over the socket
#                                of the default mariadb in database payhook,
#                                print the rows
#   harness_sql_on NAME "SQL"    the same on mariadb NAME
#   harness_pause NAME / harness_resume NAME
#                                SIGSTOP / SIGCONT a recorded process (redis,
#                                mariadb, redis-NAME, mariadb-NAME,
#                                proxy-NAME...): a backend that accepts but
#                                never answers
#   harness_start_proxy NAME HOST:PORT
#                                tests/servers/tcpproxy on a kernel-chosen loopback
#                                port in front of HOST:PORT, controlled over
#                                $HARNESS_DIR/proxy-NAME.sock; exports
#                                PROXY_PORT_<NAME>; stopped by harness_stop
#                                proxy-NAME or at cleanup
#   harness_proxy NAME COMMAND...
#                                one control command (target, delay, stall,
#                                drop, refuse, blackhole, stats: see
#                                tests/servers/tcpproxy.c); prints the reply, fails
#                                unless it is "ok..."
#   harness_silent_listener NAME a loopback port that accepts connections and
#                                never answers; exports SILENT_PORT_<NAME>
#   harness_stop_silent_listener NAME
#   harness_spawn_pool NAME WORKERS SOCKET [SPAWN-FCGI OPTIONS...] -- COMMAND...
#                                spawn-fcgi -F WORKERS -s SOCKET -P
#                                $HARNESS_DIR/NAME.pid running COMMAND, its
#                                stderr appended to $HARNESS_DIR/NAME.log;
#                                then harness_record_pool
#   harness_record_pool NAME WORKERS [STATUS]
#                                record the PIDs spawn-fcgi wrote to
#                                $HARNESS_DIR/NAME.pid as NAME-0, NAME-1...,
#                                set the array HARNESS_POOL_PIDS; fail when
#                                STATUS (spawn-fcgi's) is not 0 or fewer than
#                                WORKERS started
#   harness_start_lighttpd NAME SNIPPET [ENV...]
#                                lighttpd -D on 127.0.0.1 including SNIPPET, as
#                                a background job of this script; with ENV
#                                (NAME=VALUE...), under env -i with only those;
#                                returns once it answers GET / (which reaches
#                                no worker); sets LIGHTTPD_PORT, LIGHTTPD_PID,
#                                LIGHTTPD_LOG (error log), LIGHTTPD_OUT (stdout
#                                and stderr: a bin-path worker's log)
#   harness_wait_http URL STATUS SECONDS [PID]
#                                poll URL with curl until the answer's status
#                                is STATUS (a glob: '[1-5]??' is any answer);
#                                fails after SECONDS, or at once when process
#                                PID is gone
#   harness_fill SRC DST NAME=VALUE...
#                                a conf/ file with its @NAME@ placeholders set
#   harness_record NAME PID      record process PID as NAME: stopped at cleanup
#   harness_running NAME         succeeds while NAME is a live process we
#                                recorded (start time checked); sets HARNESS_PID
#   harness_stop NAME...         TERM (then KILL) the recorded processes, wait
#                                until gone
#   harness_now_ms               the current time in milliseconds
#   harness_starttime PID        the start time of process PID (fails when
#                                gone): tells it from a later one with its PID
#   harness_log_tail FILE        the last 15 lines of FILE on stderr
#   harness_free_port            a free loopback port chosen by the kernel
#   harness_kill NAME...         SIGKILL the recorded processes (a crash),
#                                wait until gone
#   harness_start_galera NAME [N]
#                                a MariaDB Galera cluster of N (3) nodes,
#                                mariadb NAME1..NAMEN (as the mysql user when
#                                root; galera-4 and rsync needed): node 1
#                                bootstraps and gets the database, users and
#                                schema, the others join by SST; returns once
#                                all are Synced; exports GALERA_NODES_<NAME>
#   harness_start_galera_node NAME K [MARIADBD OPTIONS...]
#                                (re)start node K (after harness_stop_mariadb
#                                NAMEK or harness_kill mariadb-NAMEK; a crashed
#                                node runs --wsrep-recover first, to rejoin
#                                by IST); returns once it is Synced
#   harness_galera_state NAME K  prints node K's wsrep_local_state_comment,
#                                wsrep_cluster_status and wsrep_ready
#                                ("Synced Primary ON")
#   harness_galera_wait NAME K STATE SECONDS
#                                until harness_galera_state matches STATE
#   harness_start_sentinel NAME MASTER_NAME MASTER_PORT [QUORUM]
#                                redis-server --sentinel monitoring
#                                127.0.0.1:MASTER_PORT; exports
#                                SENTINEL_PORT_<NAME>, recorded as
#                                sentinel-NAME
#   harness_sentinel NAME ARGS...
#                                redis-cli against sentinel NAME
#
# Exported: HARNESS_DIR; REDIS_PORT, REDIS_SOCKET, PAYHOOK_REDIS_HOST,
# PAYHOOK_REDIS_PORT; MYSQL_PORT, MYSQL_SOCKET, PAYHOOK_MYSQL_HOST,
# PAYHOOK_MYSQL_PORT, PAYHOOK_MYSQL_USER, PAYHOOK_MYSQL_PASSWORD,
# PAYHOOK_MYSQL_DATABASE; REDIS_PORT_<NAME>, MYSQL_PORT_<NAME>,
# MYSQL_SOCKET_<NAME> of the named servers; SENTINEL_PORT_<NAME>;
# GALERA_NODES_<NAME>; PROXY_PORT_<NAME>; SILENT_PORT_<NAME> (NAME
# upper-cased). The PAYHOOK_* variables always point at the default servers:
# payhook refuses any PAYHOOK_* that names no configuration key, so the
# harness invents none.
#
# $HARNESS_DIR/env holds them as NAME=VALUE lines (values quoted by printf %q,
# which leaves the harness's own values as they are), rewritten after every
# start by the owning script; the lines of the named servers and proxies come
# from their port files, so that one harness-ctl.sh started is listed too. A C
# test program reads it or its environment.
#
# Settings (environment): HARNESS_KEEP=1 keeps the folder; HARNESS_CACHE=DIR
# keeps a pristine mariadb-install-db datadir there (one per server version)
# and copies it instead of installing each time (install-db measured at about
# 0.7-1.8 s here, the copy at 0.2 s, so it is off by default);
# HARNESS_START_TIMEOUT_REDIS (10), HARNESS_START_TIMEOUT_MARIADB (30),
# HARNESS_START_TIMEOUT_LIGHTTPD (10), HARNESS_START_TIMEOUT_GALERA (120:
# a node until Synced) and HARNESS_STOP_TIMEOUT (10), in seconds;
# HARNESS_GALERA_PROVIDER (/usr/lib/galera/libgalera_smm.so);
# HARNESS_SENTINEL_DOWN_AFTER_MS (1000) and
# HARNESS_SENTINEL_FAILOVER_TIMEOUT_MS (3000); HARNESS_LIGHTTPD_PORT=N
# makes harness_start_lighttpd use port N (the demo's fixed port) instead of
# a free one.
#
# Layout of $HARNESS_DIR: pids/NAME ("PID STARTTIME" of each process we run,
# so a recycled PID is never signalled), redis/ (log), redis.sock, redis.port,
# mariadb/ (data/, error.log, install.log), mysql.sock, mariadb.port,
# mariadb.ready (first-start setup done); NAME/ for the named servers
# (redis.log, redis.sock, redis.port of redis NAME, recorded as redis-NAME;
# data/, error.log, mysql.sock, mariadb.port, mariadb.ready of mariadb NAME,
# recorded as mariadb-NAME); proxy-NAME.{sock,port,log};
# silent-NAME.{port,log}; NAME.galera (the gcomm addresses) and NAMEK/ of
# Galera node K (as mariadb NAMEK, plus galera.ports, recover.log);
# NAME/sentinel.{conf,log,port} of a sentinel; NAME.{pid,out,log} of a pool;
# NAME.{conf,port,out}, NAME-error.log, www/ and upload/ of a lighttpd; env.

# ---- locations --------------------------------------------------------------

# top_srcdir and top_builddir come from the Makefile's test environment; run by
# hand, the source tree is the one holding this file and the build tree is the
# current folder when it has tools/freeport, else the source tree.
harness__here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
if [ -z "${top_srcdir:-}" ]; then
	top_srcdir=$(dirname "$(dirname "$harness__here")")
fi
if [ -z "${top_builddir:-}" ]; then
	if [ -x "$PWD/tools/freeport" ]; then
		top_builddir=$PWD
	else
		top_builddir=$top_srcdir
	fi
fi
export top_srcdir top_builddir
harness__freeport=$top_builddir/tools/freeport
harness__tcpproxy=$top_builddir/tests/servers/tcpproxy
harness__owner=0
# mariadbd refuses to run as root without --user naming it; the install-db
# socket-authenticated admin account is named after the same user.
harness__user=$(id -un)

# ---- small helpers ----------------------------------------------------------

harness__error() {
	printf 'harness: %s\n' "$*" >&2
	return 1
}

# Prints the current time in milliseconds.
harness_now_ms() {
	local t=${EPOCHREALTIME:-}
	if [ -n "$t" ]; then
		t=${t//[!0-9]/} # the decimal separator follows the locale
		printf '%s\n' "$((10#$t / 1000))"
	else
		date +%s%3N
	fi
}

# Prints the start time of process $1 (field 22 of /proc/PID/stat), which
# tells it apart from a later process given the same PID. Fails when the
# process is gone or a zombie (PID 1 in a container may never reap it).
harness_starttime() {
	local stat state
	local -a f
	if [ ! -d /proc/self ]; then
		kill -0 "$1" 2>/dev/null || return 1
		printf '0\n'
		return 0
	fi
	read -r stat 2>/dev/null <"/proc/$1/stat" || return 1
	# The command name (field 2) may hold spaces and parentheses.
	read -r -a f <<<"${stat##*) }"
	state=${f[0]:-}
	if [ -z "$state" ] || [ "$state" = Z ] || [ "$state" = X ]; then
		return 1
	fi
	printf '%s\n' "${f[19]:-0}"
}

harness__need_dir() {
	if [ -z "${HARNESS_DIR:-}" ] || [ ! -d "$HARNESS_DIR/pids" ]; then
		harness__error "no harness folder: call harness_init (or set HARNESS_DIR for harness-ctl.sh)"
		return 1
	fi
}

# harness__check_name FUNCTION NAME: NAME becomes part of a variable name.
harness__check_name() {
	case $2 in
	'' | [0-9]* | *[!A-Za-z0-9_]*)
		harness__error "$1: NAME must be letters, digits and _, not first a digit (got '$2')"
		return 1
		;;
	esac
}

# Records that we started process $2 as $1: harness_cleanup stops it.
harness_record() {
	local start
	harness__need_dir || return 1
	case ${1:-} in
	'' | */* | .*)
		harness__error "harness_record: bad NAME '${1:-}'"
		return 1
		;;
	esac
	start=$(harness_starttime "$2") || start=gone
	printf '%s %s\n' "$2" "$start" >"$HARNESS_DIR/pids/$1"
}

# Succeeds when $1 is a live process we recorded; sets HARNESS_PID.
harness_running() {
	local file=${HARNESS_DIR:-}/pids/${1:-} pid start now
	HARNESS_PID=
	[ -n "${1:-}" ] && [ -f "$file" ] || return 1
	read -r pid start <"$file" || return 1
	now=$(harness_starttime "$pid") || return 1
	[ "$now" = "$start" ] || return 1
	HARNESS_PID=$pid
}

# Stops the processes recorded under the names given: TERM (and CONT, in case
# one is paused), up to HARNESS_STOP_TIMEOUT seconds for all of them, then
# KILL. Only PIDs whose start time still matches our record are signalled.
harness_stop() {
	local -
	set +e
	local name deadline sig left
	local -a live=()
	harness__need_dir || return 1
	for name in "$@"; do
		if harness_running "$name"; then
			# It may exit (and be reaped) between the two.
			kill -TERM "$HARNESS_PID" 2>/dev/null || true
			kill -CONT "$HARNESS_PID" 2>/dev/null || true
			live+=("$name")
		else
			rm -f "$HARNESS_DIR/pids/$name"
		fi
	done
	[ "${#live[@]}" -gt 0 ] || return 0
	for sig in TERM KILL; do
		if [ "$sig" = KILL ]; then
			deadline=$(($(harness_now_ms) + 5000))
		else
			deadline=$(($(harness_now_ms) + ${HARNESS_STOP_TIMEOUT:-10} * 1000))
		fi
		while :; do
			left=0
			for name in "${live[@]}"; do
				if harness_running "$name"; then
					left=1
					if [ "$sig" = KILL ]; then
						kill -KILL "$HARNESS_PID" 2>/dev/null || true
					fi
				fi
			done
			[ "$left" = 1 ] || break
			[ "$(harness_now_ms)" -lt "$deadline" ] || break
			sleep 0.05
		done
		[ "$left" = 1 ] || break
		if [ "$sig" = TERM ]; then
			harness__error "process(es) ${live[*]} ignored SIGTERM for ${HARNESS_STOP_TIMEOUT:-10} s: sending SIGKILL"
		fi
	done
	for name in "${live[@]}"; do
		if harness_running "$name"; then
			harness__error "$name (PID $HARNESS_PID) survived SIGKILL"
			return 1
		fi
		rm -f "$HARNESS_DIR/pids/$name"
	done
}

harness_log_tail() {
	if [ -f "$1" ]; then
		printf 'harness: last lines of %s:\n' "$1" >&2
		tail -n 15 "$1" | sed 's/^/  | /' >&2
	fi
}

# Prints a free loopback port chosen by the kernel.
harness_free_port() {
	if [ ! -x "$harness__freeport" ]; then
		harness__error "$harness__freeport not built: run 'make tools/freeport' (or make check)"
		return 1
	fi
	"$harness__freeport"
}

# Sets harness__port to the port recorded in file $1 and harness__fixed to 1
# (a restart), or to a new free port and harness__fixed to 0.
harness__port_for() {
	harness__fixed=0
	if [ -s "$1" ]; then
		harness__fixed=1
		read -r harness__port <"$1"
	else
		harness__port=$(harness_free_port)
	fi
}

# harness_wait_http URL STATUS SECONDS [PID]: polls URL until curl gets an
# answer whose status matches STATUS (a glob: '[1-5]??' is any answer), for
# SECONDS at most; with PID, fails as soon as that process is gone (a server
# that did not start). Returns 1 with the last status seen on failure.
harness_wait_http() {
	local -
	set +e
	local url=${1:-} want=${2:-} secs=${3:-} pid=${4:-} status deadline
	if [ -z "$url" ] || [ -z "$want" ] || [ -z "${secs##*[!0-9]*}" ]; then
		harness__error "usage: harness_wait_http URL STATUS SECONDS [PID]"
		return 1
	fi
	deadline=$(($(harness_now_ms) + secs * 1000))
	while :; do
		status=$(curl -s -m 2 -o /dev/null -w '%{http_code}' "$url" 2>/dev/null) ||
			status=000
		# shellcheck disable=SC2254 # STATUS is a glob on purpose
		case $status in $want) return 0 ;; esac
		if [ -n "$pid" ] && ! harness_starttime "$pid" >/dev/null; then
			harness__error "$url: the server (PID $pid) exited (last status $status)"
			return 1
		fi
		if [ "$(harness_now_ms)" -ge "$deadline" ]; then
			harness__error "$url did not answer $want within $secs s (last status $status)"
			return 1
		fi
		sleep 0.05
	done
}

# ---- the environment file ---------------------------------------------------

# Prints the variables of the named servers and the proxies as NAME=VALUE
# lines, from their port files: harness-ctl.sh may have started them, in a
# process whose environment the owning script never sees.
harness__instance_env() {
	local dir name port f
	# The default servers keep their port files in HARNESS_DIR itself.
	for f in "$HARNESS_DIR"/*/redis.port; do
		read -r port 2>/dev/null <"$f" || continue
		dir=${f%/*}
		name=${dir##*/}
		printf 'REDIS_PORT_%s=%q\n' "${name^^}" "$port"
	done
	for f in "$HARNESS_DIR"/*/mariadb.port; do
		read -r port 2>/dev/null <"$f" || continue
		dir=${f%/*}
		name=${dir##*/}
		printf 'MYSQL_PORT_%s=%q\n' "${name^^}" "$port"
		printf 'MYSQL_SOCKET_%s=%q\n' "${name^^}" "$dir/mysql.sock"
	done
	for f in "$HARNESS_DIR"/*/sentinel.port; do
		read -r port 2>/dev/null <"$f" || continue
		dir=${f%/*}
		name=${dir##*/}
		printf 'SENTINEL_PORT_%s=%q\n' "${name^^}" "$port"
	done
	for f in "$HARNESS_DIR"/proxy-*.port; do
		[ -f "$f" ] || continue
		name=${f##*/proxy-}
		name=${name%.port}
		read -r port 2>/dev/null <"$f" || continue
		printf 'PROXY_PORT_%s=%q\n' "${name^^}" "$port"
	done
}

# The owning script rewrites the whole file. Another one (harness-ctl.sh)
# only brings the named servers' and proxies' lines up to date: its
# environment is the test program's, which may have changed PAYHOOK_*.
harness__export() {
	local tmp
	if [ "$harness__owner" = 1 ]; then
		harness_export_env
	elif [ -f "$HARNESS_DIR/env" ]; then
		tmp=$(mktemp "$HARNESS_DIR/env.new.XXXXXX") || return 1
		chmod 644 "$tmp"
		{
			grep -Ev '^(REDIS_PORT|MYSQL_PORT|MYSQL_SOCKET|SENTINEL_PORT|PROXY_PORT)_' "$HARNESS_DIR/env"
			harness__instance_env
		} >"$tmp" && mv -f "$tmp" "$HARNESS_DIR/env"
	fi
}

# ---- folder and cleanup -----------------------------------------------------

# Creates HARNESS_DIR and installs the traps that clean it up on exit. Call it
# once, from the test script that owns the servers.
harness_init() {
	local -
	set +e
	if [ "$harness__owner" = 1 ]; then
		harness__error "harness_init called twice"
		return 1
	fi
	HARNESS_DIR=$(mktemp -d /tmp/payhook-test.XXXXXX) || {
		harness__error "mktemp -d failed"
		return 1
	}
	export HARNESS_DIR
	harness__owner=1
	trap harness_cleanup EXIT
	# Turn signals into exit, so the EXIT trap runs.
	trap 'exit 129' HUP
	trap 'exit 130' INT
	trap 'exit 143' TERM
	mkdir "$HARNESS_DIR/pids" || return 1
	harness_export_env
}

# Stops every process this folder records (started here or by harness-ctl.sh)
# and removes the folder unless HARNESS_KEEP=1. Keeps the exit status.
harness_cleanup() {
	local rc=$? name
	local -
	set +e # a failing step must not stop the others
	local -a names=()
	if [ "$harness__owner" != 1 ] || [ -z "${HARNESS_DIR:-}" ] ||
		[ ! -d "$HARNESS_DIR" ]; then
		return "$rc"
	fi
	if [ -d "$HARNESS_DIR/pids" ]; then
		for name in "$HARNESS_DIR"/pids/*; do
			if [ -e "$name" ]; then
				names+=("${name##*/}")
			fi
		done
	fi
	if [ "${#names[@]}" -gt 0 ]; then
		harness_stop "${names[@]}"
	fi
	if [ "${HARNESS_KEEP:-0}" = 1 ]; then
		printf '# harness: kept %s\n' "$HARNESS_DIR"
	else
		case $HARNESS_DIR in
		/tmp/payhook-test.*) rm -rf -- "$HARNESS_DIR" ;;
		esac
		if [ "$rc" != 0 ]; then
			printf '# harness: exit status %s; HARNESS_KEEP=1 keeps the server logs\n' "$rc"
		fi
	fi
	harness__owner=0
	return "$rc"
}

# Uses the servers of the folder named by HARNESS_DIR without owning it: no
# traps, no cleanup. Loads $HARNESS_DIR/env.
harness_attach() {
	local -
	set +e
	harness__need_dir || return 1
	if [ -f "$HARNESS_DIR/env" ]; then
		local restore_a=+a
		case $- in *a*) restore_a=-a ;; esac
		set -a
		# shellcheck source=/dev/null
		. "$HARNESS_DIR/env"
		set "$restore_a"
	fi
	harness__owner=0
}

# Writes the PAYHOOK_*, SILENT_PORT_* and GALERA_NODES_* variables, the
# harness's own and those of the named servers, sentinels and proxies (from
# their port files) to $HARNESS_DIR/env as NAME=VALUE lines. Replaced
# atomically.
harness_export_env() {
	local -
	set +e
	local name tmp
	harness__need_dir || return 1
	tmp=$(mktemp "$HARNESS_DIR/env.new.XXXXXX") || return 1
	chmod 644 "$tmp"
	local -a names=(HARNESS_DIR REDIS_PORT REDIS_SOCKET MYSQL_PORT MYSQL_SOCKET)
	for name in $(compgen -e); do
		case $name in
		PAYHOOK_* | SILENT_PORT_* | GALERA_NODES_*) names+=("$name") ;;
		esac
	done
	{
		for name in "${names[@]}"; do
			if [ -n "${!name+set}" ]; then
				printf '%s=%q\n' "$name" "${!name}"
			fi
		done
		harness__instance_env
	} >"$tmp" || return 1
	mv -f "$tmp" "$HARNESS_DIR/env"
}

harness_pause() {
	local -
	set +e
	harness__need_dir || return 1
	harness_running "${1:-}" || {
		harness__error "${1:-(no name)} is not running"
		return 1
	}
	kill -STOP "$HARNESS_PID"
}

harness_resume() {
	local -
	set +e
	harness__need_dir || return 1
	harness_running "${1:-}" || {
		harness__error "${1:-(no name)} is not running"
		return 1
	}
	kill -CONT "$HARNESS_PID"
}

# ---- starting a server ------------------------------------------------------

# Waits until "READY PORT ARGS..." succeeds, at most $2 seconds, while process
# $1 lives. Returns 0 when ready, 1 on timeout, 2 when the process exited.
harness__wait_ready() {
	local name=$1 timeout=$2 deadline
	shift 2
	deadline=$(($(harness_now_ms) + timeout * 1000))
	while :; do
		if "$@"; then
			return 0
		fi
		harness_running "$name" || return 2
		[ "$(harness_now_ms)" -lt "$deadline" ] || return 1
		sleep 0.05
	done
}

# harness__start_server [--detach] NAME WHAT PORTFILE TIMEOUT LOG OUT BUILD
#                       READY [ARGS...]
# Starts the server recorded as NAME (WHAT names it in messages) on a
# loopback port: the one in PORTFILE (a restart) or else a free one. "BUILD
# PORT ARGS..." sets harness__cmd to its command line, which runs in the
# background (stdin /dev/null, stdout and stderr appended to OUT); it is ready
# when "READY PORT ARGS..." succeeds, within TIMEOUT seconds. A server that
# exits is started again, up to 5 times: most likely another process took
# the port between freeport and bind (on a restart the old process may hold
# it a moment more: wait). On failure the tails of LOG and OUT go to stderr.
# --detach: under setsid and disowned, so that a server restarted from inside
# a test (harness-ctl.sh) does not die with the test's process group (Check
# kills it); otherwise a background job of this script (the demo waits for
# its lighttpd). Sets harness__port, harness__fixed (1: the recorded port)
# and harness__spawned (the PID); writes PORTFILE.
harness__start_server() {
	local detach=0 name what portfile timeout log out build ready try status pid
	if [ "$1" = --detach ]; then
		detach=1
		shift
	fi
	name=$1 what=$2 portfile=$3 timeout=$4 log=$5 out=$6 build=$7 ready=$8
	shift 8
	for try in 1 2 3 4 5; do
		harness__port_for "$portfile" || return 1
		"$build" "$harness__port" "$@" || return 1
		if [ "$detach" = 1 ]; then
			setsid "${harness__cmd[@]}" </dev/null >>"$out" 2>&1 &
			pid=$!
			disown "$pid"
		else
			"${harness__cmd[@]}" </dev/null >>"$out" 2>&1 &
			pid=$!
		fi
		harness_record "$name" "$pid"
		status=0
		harness__wait_ready "$name" "$timeout" "$ready" "$harness__port" "$@" ||
			status=$?
		if [ "$status" = 0 ]; then
			printf '%s\n' "$harness__port" >"$portfile"
			harness__spawned=$pid
			return 0
		fi
		harness_stop "$name"
		if [ "$status" = 1 ]; then
			harness_log_tail "$log"
			harness_log_tail "$out"
			harness__error "$what did not answer within $timeout s"
			return 1
		fi
		if [ "$try" = 5 ]; then
			harness_log_tail "$log"
			harness_log_tail "$out"
			harness__error "$what failed to start on 127.0.0.1:$harness__port"
			return 1
		fi
		if [ "$harness__fixed" = 1 ]; then
			sleep 0.5
		fi
	done
}

# harness__instance KIND NAME: the places of server NAME of KIND (redis or
# mariadb). The default NAME, KIND itself, keeps the layout of old (its files
# in HARNESS_DIR, recorded as KIND); another gets the folder HARNESS_DIR/NAME
# (which a redis and a mariadb of the same NAME share: their files differ)
# and is recorded as KIND-NAME. Sets harness__iname (the record name),
# harness__idir, harness__isock, harness__iport (its port file),
# harness__iready (mariadb's setup marker) and harness__ivar ("" or _NAME
# upper-cased: the suffix of its variables).
harness__instance() {
	local kind=$1 name=${2:-$1}
	harness__iname=$name
	if [ "$name" = "$kind" ]; then
		harness__idir=$HARNESS_DIR/$kind
		harness__ivar=
		if [ "$kind" = redis ]; then
			harness__isock=$HARNESS_DIR/redis.sock
			harness__iport=$HARNESS_DIR/redis.port
		else
			harness__isock=$HARNESS_DIR/mysql.sock
			harness__iport=$HARNESS_DIR/mariadb.port
			harness__iready=$HARNESS_DIR/mariadb.ready
		fi
		return 0
	fi
	harness__check_name "$kind server" "$name" || return 1
	# The default servers' folders and the records' folder are taken.
	case $name in
	redis | mariadb | pids)
		harness__error "$name cannot name another $kind"
		return 1
		;;
	esac
	harness__iname=$kind-$name
	harness__idir=$HARNESS_DIR/$name
	harness__ivar=_${name^^}
	if [ "$kind" = redis ]; then
		harness__isock=$harness__idir/redis.sock
		harness__iport=$harness__idir/redis.port
	else
		harness__isock=$harness__idir/mysql.sock
		harness__iport=$harness__idir/mariadb.port
		harness__iready=$harness__idir/mariadb.ready
	fi
}

# ---- redis ------------------------------------------------------------------

# harness__redis_cmd PORT DIR SOCKET
harness__redis_cmd() {
	# DEBUG SLEEP (local clients only) lets tests stall a reply.
	harness__cmd=(redis-server --bind 127.0.0.1 --port "$1"
		--unixsocket "$3" --unixsocketperm 700
		--save '' --appendonly no --daemonize no
		--enable-debug-command local
		--dir "$2" --logfile "$2/redis.log")
}

# Asked over our own socket: whatever else may answer on the TCP port, redis
# listens there only once it holds the port too.
harness__redis_ready() {
	[ "$(timeout 2 redis-cli -s "$3" ping 2>/dev/null)" = PONG ]
}

# Starts redis-server on 127.0.0.1 (and a unix socket), or restarts it on the
# port it had. Already running: does nothing. Without NAME (or with redis)
# the default server, which PAYHOOK_REDIS_* point at; with NAME another one,
# whose port is exported as REDIS_PORT_<NAME>.
harness_start_redis() {
	local -
	set +e
	local name dir sock var t0 what
	harness__need_dir || return 1
	harness__instance redis "${1:-}" || return 1
	name=$harness__iname dir=$harness__idir sock=$harness__isock var=$harness__ivar
	if harness_running "$name"; then
		return 0
	fi
	mkdir -p "$dir" || return 1
	what=redis-server${var:+ ${dir##*/}}
	t0=$(harness_now_ms)
	harness__start_server --detach "$name" "$what" "$harness__iport" \
		"${HARNESS_START_TIMEOUT_REDIS:-10}" "$dir/redis.log" "$dir/redis.out" \
		harness__redis_cmd harness__redis_ready "$dir" "$sock" || return 1
	if [ -z "$var" ]; then
		REDIS_PORT=$harness__port
		REDIS_SOCKET=$sock
		PAYHOOK_REDIS_HOST=127.0.0.1
		PAYHOOK_REDIS_PORT=$harness__port
		export REDIS_PORT REDIS_SOCKET PAYHOOK_REDIS_HOST PAYHOOK_REDIS_PORT
	else
		printf -v "REDIS_PORT$var" '%s' "$harness__port"
		export "REDIS_PORT$var"
	fi
	harness__export
	printf '# harness: %s %s on 127.0.0.1:%s in %s ms\n' "$what" \
		"$([ "$harness__fixed" = 1 ] && echo restarted || echo started)" \
		"$harness__port" "$(($(harness_now_ms) - t0))"
}

harness_stop_redis() {
	local -
	set +e
	harness__need_dir || return 1
	harness__instance redis "${1:-}" || return 1
	harness_stop "$harness__iname"
}

harness_redis() {
	if [ -z "${REDIS_PORT:-}" ]; then
		harness__error "redis is not started"
		return 1
	fi
	redis-cli -h 127.0.0.1 -p "$REDIS_PORT" "$@"
}

# harness_redis_on NAME ARGS...: redis-cli against redis NAME (redis: the
# default one), on the port in its port file.
harness_redis_on() {
	local -
	set +e
	local port
	harness__need_dir || return 1
	harness__instance redis "${1:-}" || return 1
	shift
	if ! read -r port 2>/dev/null <"$harness__iport"; then
		harness__error "$harness__iname was never started"
		return 1
	fi
	redis-cli -h 127.0.0.1 -p "$port" "$@"
}

# ---- mariadb ----------------------------------------------------------------

# InnoDB settings shared by install-db and the server, sized for tests.
harness__innodb_opts=(
	--innodb-buffer-pool-size=64M
	--innodb-log-file-size=16M
	--innodb-flush-log-at-trx-commit=2
	--innodb-doublewrite=0
	# Same behaviour in containers whose seccomp profile blocks io_uring.
	--innodb-use-native-aio=0
	--innodb-buffer-pool-load-at-startup=0
	--innodb-buffer-pool-dump-at-shutdown=0
)

# Runs mariadb-install-db into the new datadir $1, logging to $2.
harness__install_db() {
	local try
	# Tried twice: a bootstrap that fails once on a loaded machine is no
	# reason to fail a test. The log's first error lines say why it failed
	# (its tail is only the tool's boilerplate).
	for try in 1 2; do
		if mariadb-install-db --no-defaults --datadir="$1" \
			--auth-root-authentication-method=socket --skip-test-db \
			--user="$harness__user" --skip-log-bin \
			"${harness__innodb_opts[@]}" >>"$2" 2>&1 </dev/null; then
			return 0
		fi
		printf 'harness: mariadb-install-db attempt %s failed:\n' "$try" >&2
		grep -i -m 10 -E 'error|fail|abort' "$2" | sed 's/^/  | /' >&2
		rm -rf "$1"
	done
	harness__error "mariadb-install-db failed (log: $2)"
	return 1
}

# Fills the new datadir $1 (install log $2): a copy of the HARNESS_CACHE
# template when that is set (installed once per server version), else a
# fresh install.
harness__mariadb_datadir() {
	local data=$1 log=$2 tpl tmp version
	harness__install_how=install
	if [ -z "${HARNESS_CACHE:-}" ]; then
		harness__install_db "$data" "$log"
		return
	fi
	harness__install_how="copy of cached template"
	read -r _ _ version _ < <(mariadbd --version)
	tpl=$HARNESS_CACHE/mariadb-${version//[!A-Za-z0-9.+-]/_}
	if [ ! -d "$tpl" ]; then
		mkdir -p "$HARNESS_CACHE" || return 1
		tmp=$(mktemp -d "$HARNESS_CACHE/.new.XXXXXX") || return 1
		if ! harness__install_db "$tmp/data" "$log"; then
			rm -rf -- "$tmp"
			return 1
		fi
		# Atomic; when a parallel test won the race, use its copy.
		mv -T "$tmp/data" "$tpl" 2>/dev/null || true
		harness__install_how="install, template cached"
		rm -rf -- "$tmp"
	fi
	cp -a "$tpl" "$data"
}

# The first start's setup over socket $1: database, application users, schema.
harness__mariadb_setup() {
	local sock=$1 h
	local sql="CREATE DATABASE IF NOT EXISTS payhook;"
	for h in 127.0.0.1 localhost; do
		sql+="CREATE USER IF NOT EXISTS 'payhook'@'$h' IDENTIFIED BY 'payhook-test';"
		sql+="GRANT ALL ON payhook.* TO 'payhook'@'$h';"
	done
	if ! mariadb --no-defaults --socket="$sock" --user="$harness__user" \
		--batch -e "$sql" </dev/null; then
		harness__error "creating database payhook and its users failed"
		return 1
	fi
	if ! mariadb --no-defaults --socket="$sock" --user="$harness__user" \
		--batch payhook <"$top_srcdir/db/schema.sql"; then
		harness__error "loading $top_srcdir/db/schema.sql failed"
		return 1
	fi
}

# harness__mariadb_cmd PORT BASE SOCKET
harness__mariadb_cmd() {
	local -a extra=()
	# On a restart the port may still be held for a moment: let mariadbd
	# retry the bind itself.
	if [ "$harness__fixed" = 1 ]; then
		extra=(--port-open-timeout=10)
	fi
	harness__cmd=(mariadbd --no-defaults --datadir="$2/data" --socket="$3"
		--port="$1" --bind-address=127.0.0.1
		--user="$harness__user" --pid-file="$2/mariadbd.pid"
		--log-error="$2/error.log" --skip-log-bin
		--skip-name-resolve --max-connections=300
		--character-set-server=utf8mb4
		--collation-server=utf8mb4_general_ci
		"${harness__innodb_opts[@]}" "${extra[@]}")
}

harness__mariadb_ready() {
	[ "$(timeout 5 mariadb-admin --no-defaults --socket="$3" \
		--user="$harness__user" --connect-timeout=2 ping 2>/dev/null)" = \
		'mysqld is alive' ]
}

# Starts mariadbd on 127.0.0.1 with its socket in HARNESS_DIR; the first time
# it installs the datadir, creates database payhook, users payhook@127.0.0.1
# and payhook@localhost (password payhook-test) and loads db/schema.sql. Again
# after harness_stop_mariadb: restarts on the same port and datadir. Already
# running: does nothing. Without NAME (or with mariadb) the default server,
# which PAYHOOK_MYSQL_* point at; with NAME another one, set up the same way,
# exported as MYSQL_PORT_<NAME> and MYSQL_SOCKET_<NAME>.
harness_start_mariadb() {
	local -
	set +e
	local name base sock var t0 t1 t2 what install_ms=0 setup_ms=0
	harness__install_how="existing datadir"
	harness__need_dir || return 1
	harness__instance mariadb "${1:-}" || return 1
	name=$harness__iname base=$harness__idir sock=$harness__isock var=$harness__ivar
	if harness_running "$name"; then
		return 0
	fi
	mkdir -p "$base" || return 1
	what=mariadbd${var:+ ${base##*/}}
	t0=$(harness_now_ms)
	if [ ! -d "$base/data" ]; then
		harness__mariadb_datadir "$base/data" "$base/install.log" || return 1
		install_ms=$(($(harness_now_ms) - t0))
	fi
	t1=$(harness_now_ms)
	harness__start_server --detach "$name" "$what" "$harness__iport" \
		"${HARNESS_START_TIMEOUT_MARIADB:-30}" "$base/error.log" \
		"$base/mariadbd.out" harness__mariadb_cmd harness__mariadb_ready \
		"$base" "$sock" || return 1
	t2=$(harness_now_ms)
	if [ ! -e "$harness__iready" ]; then
		harness__mariadb_setup "$sock" || return 1
		: >"$harness__iready"
		setup_ms=$(($(harness_now_ms) - t2))
	fi
	if [ -z "$var" ]; then
		MYSQL_PORT=$harness__port
		MYSQL_SOCKET=$sock
		PAYHOOK_MYSQL_HOST=127.0.0.1
		PAYHOOK_MYSQL_PORT=$harness__port
		PAYHOOK_MYSQL_USER=payhook
		PAYHOOK_MYSQL_PASSWORD=payhook-test
		PAYHOOK_MYSQL_DATABASE=payhook
		export MYSQL_PORT MYSQL_SOCKET PAYHOOK_MYSQL_HOST PAYHOOK_MYSQL_PORT \
			PAYHOOK_MYSQL_USER PAYHOOK_MYSQL_PASSWORD PAYHOOK_MYSQL_DATABASE
	else
		printf -v "MYSQL_PORT$var" '%s' "$harness__port"
		printf -v "MYSQL_SOCKET$var" '%s' "$sock"
		export "MYSQL_PORT$var" "MYSQL_SOCKET$var"
	fi
	harness__export
	if [ "$harness__fixed" = 1 ]; then
		printf '# harness: %s restarted on 127.0.0.1:%s in %s ms\n' \
			"$what" "$harness__port" "$((t2 - t1))"
	else
		printf '# harness: %s started on 127.0.0.1:%s in %s ms (%s %s ms, start %s ms, setup %s ms)\n' \
			"$what" "$harness__port" "$(($(harness_now_ms) - t0))" \
			"$harness__install_how" "$install_ms" "$((t2 - t1))" "$setup_ms"
	fi
}

harness_stop_mariadb() {
	local -
	set +e
	harness__need_dir || return 1
	harness__instance mariadb "${1:-}" || return 1
	harness_stop "$harness__iname"
}

# Runs SQL as the admin account (unix-socket authentication) in database
# payhook and prints the rows, tab-separated, without column names.
harness_sql() {
	if [ -z "${MYSQL_SOCKET:-}" ]; then
		harness__error "mariadb is not started"
		return 1
	fi
	mariadb --no-defaults --socket="$MYSQL_SOCKET" --user="$harness__user" \
		--batch --skip-column-names --database=payhook -e "$1" </dev/null
}

# harness_sql_on NAME "SQL": harness_sql on mariadb NAME (mariadb: the
# default one).
harness_sql_on() {
	local -
	set +e
	harness__need_dir || return 1
	harness__instance mariadb "${1:-}" || return 1
	if [ ! -S "$harness__isock" ]; then
		harness__error "$harness__iname is not running (no $harness__isock)"
		return 1
	fi
	mariadb --no-defaults --socket="$harness__isock" --user="$harness__user" \
		--batch --skip-column-names --database=payhook -e "${2:-}" </dev/null
}

# ---- web server and workers -------------------------------------------------

# harness_fill SRC DST NAME=VALUE...: copies a conf/ file SRC to DST with
# every @NAME@ placeholder replaced by VALUE (as the tests and the demo use
# conf/); fails when a placeholder is left.
harness_fill() {
	local src=$1 dst=$2 kv value
	local -a sed_script=()
	shift 2
	for kv in "$@"; do
		value=${kv#*=}
		value=${value//\\/\\\\}
		value=${value//|/\\|}
		value=${value//&/\\&}
		sed_script+=(-e "s|@${kv%%=*}@|$value|g")
	done
	sed "${sed_script[@]}" "$src" >"$dst" || return 1
	if grep -n '@[A-Z_]*@' "$dst" >&2; then
		echo "placeholder left in $dst" >&2
		return 1
	fi
}

# harness_record_pool NAME WORKERS [STATUS]: after spawn-fcgi -P
# $HARNESS_DIR/NAME.pid (run here or by conf/spawn-fcgi.sh) exited with
# STATUS: records each worker's PID as NAME-0, NAME-1... and sets the array
# HARNESS_POOL_PIDS. Fails, with the tails of NAME.out (spawn-fcgi's output)
# and NAME.log (the workers'), unless STATUS is 0 and WORKERS were started.
harness_record_pool() {
	local -
	set +e
	local name=${1:-} workers=${2:-} rc=${3:-0} pid n=0
	HARNESS_POOL_PIDS=()
	harness__need_dir || return 1
	# spawn-fcgi writes one PID a line, the last without a newline, and
	# only those of workers still alive after its first 0.1 s.
	if [ -f "$HARNESS_DIR/$name.pid" ]; then
		while read -r pid || [ -n "$pid" ]; do
			case $pid in '' | *[!0-9]*) continue ;; esac
			harness_record "$name-$n" "$pid"
			HARNESS_POOL_PIDS+=("$pid")
			n=$((n + 1))
		done <"$HARNESS_DIR/$name.pid"
	fi
	if [ "$rc" != 0 ] || [ "$n" != "$workers" ]; then
		harness_log_tail "$HARNESS_DIR/$name.out"
		harness_log_tail "$HARNESS_DIR/$name.log"
		harness__error "spawn-fcgi started $n of $workers workers of pool $name (status $rc)"
		return 1
	fi
}

# harness_children PID: the PIDs of process PID's children, one per line
# (from /proc: procps may not be installed).
harness_children() {
	local stat f
	local -a fields
	for f in /proc/[0-9]*/stat; do
		read -r stat 2>/dev/null <"$f" || continue
		read -r -a fields <<<"${stat##*) }"
		[ "${fields[1]:-}" = "$1" ] && printf '%s\n' "${f//[!0-9]/}"
	done
	return 0
}

# harness_record_master NAME WORKERS [STATUS]: a payhook master (payhook
# --workers) started by spawn-fcgi -F 1, whose PID is in $HARNESS_DIR/NAME.pid:
# records it as NAME-master and waits (10 s at most) until it runs WORKERS
# workers, recorded as NAME-0...; sets HARNESS_MASTER_PID and
# HARNESS_POOL_PIDS (the workers).
harness_record_master() {
	local -
	set +e
	local name=${1:-} workers=${2:-} rc=${3:-0} pid=
	local deadline=$(($(harness_now_ms) + 10000)) n
	HARNESS_POOL_PIDS=()
	HARNESS_MASTER_PID=
	harness__need_dir || return 1
	[ -f "$HARNESS_DIR/$name.pid" ] && read -r pid <"$HARNESS_DIR/$name.pid"
	if [ "$rc" != 0 ] || [ -z "$pid" ]; then
		harness_log_tail "$HARNESS_DIR/$name.out"
		harness_log_tail "$HARNESS_DIR/$name.log"
		harness__error "spawn-fcgi did not start the master of pool $name (status $rc)"
		return 1
	fi
	harness_record "$name-master" "$pid"
	HARNESS_MASTER_PID=$pid
	while mapfile -t HARNESS_POOL_PIDS < <(harness_children "$pid");
		[ "${#HARNESS_POOL_PIDS[@]}" -lt "$workers" ]; do
		if [ "$(harness_now_ms)" -ge "$deadline" ] || ! harness_running "$name-master"; then
			harness_log_tail "$HARNESS_DIR/$name.log"
			harness__error "master $pid of pool $name runs ${#HARNESS_POOL_PIDS[@]} of $workers workers"
			return 1
		fi
		sleep 0.05
	done
	n=0
	for pid in "${HARNESS_POOL_PIDS[@]}"; do
		harness_record "$name-$n" "$pid"
		n=$((n + 1))
	done
}

# harness_spawn_pool NAME WORKERS SOCKET [SPAWN-FCGI OPTIONS...] -- COMMAND...
# A pool of WORKERS FastCGI processes running COMMAND on the unix socket
# SOCKET: spawn-fcgi binds it, forks them and exits (its output in
# $HARNESS_DIR/NAME.out). Then harness_record_pool: HARNESS_POOL_PIDS.
harness_spawn_pool() {
	local -
	set +e
	local name=${1:-} workers=${2:-} socket=${3:-} log rc
	local -a opts=()
	harness__need_dir || return 1
	shift 3 2>/dev/null || set --
	while [ "$#" -gt 0 ] && [ "$1" != -- ]; do
		opts+=("$1")
		shift
	done
	if [ "$#" -lt 2 ] || [ -z "$name" ] || [ -z "$socket" ] ||
		[ -z "$workers" ] || [ -n "${workers//[0-9]/}" ]; then
		harness__error "usage: harness_spawn_pool NAME WORKERS SOCKET [SPAWN-FCGI OPTIONS...] -- COMMAND..."
		return 1
	fi
	shift
	if ! command -v spawn-fcgi >/dev/null 2>&1; then
		harness__error "spawn-fcgi is not installed"
		return 1
	fi
	log=$HARNESS_DIR/$name.log
	# A PID file left by an earlier pool of this name must not be read as
	# this one's when spawn-fcgi fails before writing it.
	rm -f "$HARNESS_DIR/$name.pid"
	# spawn-fcgi points the workers' stderr at /dev/null, where payhook's
	# log would be lost: sh appends it to NAME.log instead, and exec keeps
	# the PID spawn-fcgi wrote.
	# shellcheck disable=SC2016 # $1 and $@ are for the inner sh
	spawn-fcgi -s "$socket" -F "$workers" -P "$HARNESS_DIR/$name.pid" \
		"${opts[@]}" -- /bin/sh -c 'log=$1; shift; exec "$@" 2>>"$log"' \
		sh "$log" "$@" </dev/null >"$HARNESS_DIR/$name.out" 2>&1
	rc=$?
	harness_record_pool "$name" "$workers" "$rc"
}

# harness__lighttpd_cmd PORT NAME SNIPPET TAG [ENV...]: writes NAME.conf.
harness__lighttpd_cmd() {
	local port=$1 name=$2 snippet=$3 tag=$4 bin
	shift 4
	bin=$(command -v lighttpd) || return 1
	cat >"$HARNESS_DIR/$name.conf" <<-EOF || return 1
	server.document-root = "$HARNESS_DIR/www"
	server.bind = "127.0.0.1"
	server.port = $port
	server.tag = "$tag"
	server.errorlog = "$HARNESS_DIR/$name-error.log"
	server.upload-dirs = ( "$HARNESS_DIR/upload" )
	include "$snippet"
	EOF
	harness__cmd=("$bin" -D -f "$HARNESS_DIR/$name.conf")
	if [ "$#" -gt 0 ]; then
		harness__cmd=(env -i "$@" "${harness__cmd[@]}")
	fi
}

# Ready when GET / (no worker behind it) gets an answer carrying this
# lighttpd's own server tag: on a fixed port, another web server may answer.
harness__lighttpd_ready() {
	curl -s -m 2 -o /dev/null -D - "http://127.0.0.1:$1/" 2>/dev/null |
		tr -d '\r' | grep -qixF "server: $4"
}

# harness_start_lighttpd NAME SNIPPET [ENV...]: lighttpd -D on 127.0.0.1 (a
# free port, or HARNESS_LIGHTTPD_PORT) with $HARNESS_DIR/www as document root,
# including SNIPPET (which must not set server.bind, .port, .tag, .errorlog,
# .document-root or .upload-dirs), as a background job of this script. With
# ENV (NAME=VALUE...), it runs under env -i with only those variables. Returns
# once it answers; wait for a location behind it with harness_wait_http.
harness_start_lighttpd() {
	local -
	set +e
	local name=${1:-} snippet=${2:-} t0
	harness__need_dir || return 1
	case $name in
	'' | *[!A-Za-z0-9_.-]* | .*)
		harness__error "usage: harness_start_lighttpd NAME SNIPPET [ENV...] (NAME: letters, digits, _ . -)"
		return 1
		;;
	esac
	shift 2
	if [ ! -f "$snippet" ]; then
		harness__error "harness_start_lighttpd: no file $snippet"
		return 1
	fi
	if ! command -v lighttpd >/dev/null 2>&1; then
		harness__error "lighttpd is not installed"
		return 1
	fi
	if harness_running "$name"; then
		harness__error "$name is already running"
		return 1
	fi
	mkdir -p "$HARNESS_DIR/www" "$HARNESS_DIR/upload" || return 1
	if [ -n "${HARNESS_LIGHTTPD_PORT:-}" ]; then
		printf '%s\n' "$HARNESS_LIGHTTPD_PORT" >"$HARNESS_DIR/$name.port" || return 1
	fi
	LIGHTTPD_LOG=$HARNESS_DIR/$name-error.log
	LIGHTTPD_OUT=$HARNESS_DIR/$name.out
	t0=$(harness_now_ms)
	harness__start_server "$name" "lighttpd $name" "$HARNESS_DIR/$name.port" \
		"${HARNESS_START_TIMEOUT_LIGHTTPD:-10}" "$LIGHTTPD_LOG" "$LIGHTTPD_OUT" \
		harness__lighttpd_cmd harness__lighttpd_ready "$name" "$snippet" \
		"harness-$name-$$-$RANDOM" "$@" || return 1
	LIGHTTPD_PORT=$harness__port
	# shellcheck disable=SC2034 # for the caller
	LIGHTTPD_PID=$harness__spawned
	printf '# harness: lighttpd %s on 127.0.0.1:%s in %s ms\n' "$name" \
		"$LIGHTTPD_PORT" "$(($(harness_now_ms) - t0))"
}

# ---- silent listeners and proxies -------------------------------------------

# harness__start_helper NAME OUT LOG WHAT COMMAND...: runs a test helper that
# prints its listening port on a line of its own (freeport --listen-silent,
# tcpproxy) under setsid (harness-ctl.sh may start it), records it as NAME and
# sets harness__port once the line is complete: it listens then.
harness__start_helper() {
	local name=$1 out=$2 log=$3 what=$4 pid deadline
	shift 4
	rm -f "$out"
	setsid "$@" </dev/null >"$out" 2>>"$log" &
	pid=$!
	disown "$pid"
	harness_record "$name" "$pid"
	# 10 s: slow under valgrind.
	deadline=$(($(harness_now_ms) + 10000))
	harness__port=
	until read -r harness__port 2>/dev/null <"$out"; do
		if ! harness_running "$name" ||
			[ "$(harness_now_ms)" -ge "$deadline" ]; then
			harness_stop "$name"
			harness_log_tail "$log"
			harness__error "$what did not start"
			return 1
		fi
		sleep 0.02
	done
}

# Starts a loopback listener that accepts connections and never answers, for
# timeout tests; exports its port as SILENT_PORT_<NAME> (NAME upper-cased).
harness_silent_listener() {
	local -
	set +e
	local name=${1:-} var t0
	harness__need_dir || return 1
	harness__check_name harness_silent_listener "$name" || return 1
	var=SILENT_PORT_${name^^}
	if harness_running "silent-$name"; then
		harness__error "silent listener $name is already running"
		return 1
	fi
	if [ ! -x "$harness__freeport" ]; then
		harness__error "$harness__freeport not built: run 'make tools/freeport' (or make check)"
		return 1
	fi
	t0=$(harness_now_ms)
	harness__start_helper "silent-$name" "$HARNESS_DIR/silent-$name.port" \
		"$HARNESS_DIR/silent-$name.log" "silent listener $name" \
		"$harness__freeport" --listen-silent || return 1
	printf -v "$var" '%s' "$harness__port"
	export "${var?}"
	harness__export
	printf '# harness: silent listener %s on 127.0.0.1:%s in %s ms\n' \
		"$name" "$harness__port" "$(($(harness_now_ms) - t0))"
}

harness_stop_silent_listener() {
	local -
	set +e
	harness__need_dir || return 1
	harness_stop "silent-${1:-}"
}

# harness_start_proxy NAME HOST:PORT: tests/servers/tcpproxy between a client and
# HOST:PORT, on a loopback port the kernel picks (exported as
# PROXY_PORT_<NAME>), driven through $HARNESS_DIR/proxy-NAME.sock with
# harness_proxy. Recorded as proxy-NAME.
harness_start_proxy() {
	local -
	set +e
	local name=${1:-} target=${2:-} var t0
	harness__need_dir || return 1
	harness__check_name harness_start_proxy "$name" || return 1
	if [ -z "$target" ]; then
		harness__error "usage: harness_start_proxy NAME HOST:PORT"
		return 1
	fi
	var=PROXY_PORT_${name^^}
	if harness_running "proxy-$name"; then
		harness__error "proxy $name is already running"
		return 1
	fi
	if [ ! -x "$harness__tcpproxy" ]; then
		harness__error "$harness__tcpproxy not built: run 'make tests/servers/tcpproxy' (or make)"
		return 1
	fi
	t0=$(harness_now_ms)
	harness__start_helper "proxy-$name" "$HARNESS_DIR/proxy-$name.port" \
		"$HARNESS_DIR/proxy-$name.log" "proxy $name" "$harness__tcpproxy" \
		--target "$target" --control "$HARNESS_DIR/proxy-$name.sock" || return 1
	printf -v "$var" '%s' "$harness__port"
	export "${var?}"
	harness__export
	printf '# harness: proxy %s on 127.0.0.1:%s to %s in %s ms\n' \
		"$name" "$harness__port" "$target" "$(($(harness_now_ms) - t0))"
}

# harness_proxy NAME COMMAND...: sends COMMAND (its words joined by spaces,
# e.g. harness_proxy db delay 300) to proxy NAME; prints the reply on stdout
# when it is "ok...", else on stderr, and fails.
harness_proxy() {
	local -
	set +e
	local name=${1:-} sock reply rc
	harness__need_dir || return 1
	harness__check_name harness_proxy "$name" || return 1
	shift
	sock=$HARNESS_DIR/proxy-$name.sock
	if [ "$#" = 0 ]; then
		harness__error "usage: harness_proxy NAME COMMAND..."
		return 1
	fi
	if ! harness_running "proxy-$name" || [ ! -S "$sock" ]; then
		harness__error "proxy $name is not running"
		return 1
	fi
	reply=$("$harness__tcpproxy" --send "$sock" "$*")
	rc=$?
	if [ "$rc" = 0 ]; then
		printf '%s\n' "$reply"
	else
		harness__error "proxy $name: $*: ${reply:-no reply}"
	fi
	return "$rc"
}

# ---- Galera cluster, Redis Sentinel -----------------------------------------

# The Galera provider library (Debian's galera-4).
harness__galera_provider=${HARNESS_GALERA_PROVIDER:-/usr/lib/galera/libgalera_smm.so}
# The nodes run as this user. As root it is mysql: the joiner's SST (the
# rsync daemon of wsrep_sst_rsync) drops privileges to the server's user, so
# the datadirs must be that user's. Otherwise the current user, as above.
harness__galera_user=$harness__user

# harness__galera_prepare: checks what a cluster needs; as root, lets the
# mysql user reach HARNESS_DIR (mktemp made it 0700) and run the nodes.
harness__galera_prepare() {
	local tool
	if [ ! -r "$harness__galera_provider" ]; then
		harness__error "no Galera provider at $harness__galera_provider (install galera-4)"
		return 1
	fi
	for tool in mariadbd mariadb rsync wsrep_sst_rsync; do
		if ! command -v "$tool" >/dev/null 2>&1; then
			harness__error "$tool is not installed (mariadb-server, rsync)"
			return 1
		fi
	done
	if [ "$(id -u)" = 0 ]; then
		if ! id mysql >/dev/null 2>&1; then
			harness__error "running as root, the Galera nodes need the mysql user (mariadb-server creates it)"
			return 1
		fi
		harness__galera_user=mysql
		chmod 711 "$HARNESS_DIR" || return 1
	fi
}

# harness__galera_cmd PORT BASE SOCKET NAME K [MARIADBD OPTIONS...]: node K
# of cluster NAME, its Galera ports from BASE/galera.ports (gcomm, IST, SST),
# the cluster's addresses from $HARNESS_DIR/NAME.galera.
harness__galera_cmd() {
	local port=$1 base=$2 sock=$3 name=$4 k=$5 gport iport sport cluster
	shift 5
	read -r gport iport sport <"$base/galera.ports" || return 1
	read -r cluster <"$HARNESS_DIR/$name.galera" || return 1
	harness__cmd=(mariadbd --no-defaults --datadir="$base/data" --socket="$sock"
		--port="$port" --bind-address=127.0.0.1 --port-open-timeout=10
		--user="$harness__galera_user" --pid-file="$base/mariadbd.pid"
		--log-error="$base/error.log" --skip-log-bin
		--skip-name-resolve --max-connections=300
		--character-set-server=utf8mb4
		--collation-server=utf8mb4_general_ci
		"${harness__innodb_opts[@]}"
		--binlog-format=ROW --default-storage-engine=InnoDB
		--innodb-autoinc-lock-mode=2
		--wsrep-on=ON --wsrep-provider="$harness__galera_provider"
		--wsrep-cluster-name="payhook-$name"
		--wsrep-cluster-address="gcomm://$cluster"
		--wsrep-node-name="$name$k"
		--wsrep-node-address="127.0.0.1:$gport"
		--wsrep-node-incoming-address="127.0.0.1:$port"
		--wsrep-sst-method=rsync
		--wsrep-sst-receive-address="127.0.0.1:$sport"
		--wsrep-provider-options="gmcast.listen_addr=tcp://127.0.0.1:$gport;ist.recv_addr=127.0.0.1:$iport;gcache.size=128M"
		"$@")
}

# harness_galera_state NAME K: prints node K's "wsrep_local_state_comment
# wsrep_cluster_status wsrep_ready" (e.g. "Synced Primary ON"), asked over
# its socket as the admin account; fails when it does not answer.
harness_galera_state() {
	local -
	set +e
	local out k v state='?' cluster='?' ready='?'
	harness__need_dir || return 1
	harness__instance mariadb "${1:-}${2:-}" || return 1
	[ -S "$harness__isock" ] || return 1
	out=$(timeout 5 mariadb --no-defaults --socket="$harness__isock" \
		--user="$harness__user" --connect-timeout=2 --batch \
		--skip-column-names -e "SHOW STATUS WHERE Variable_name IN \
		('wsrep_local_state_comment', 'wsrep_cluster_status', 'wsrep_ready')" \
		</dev/null 2>/dev/null) || return 1
	while read -r k v; do
		case $k in
		wsrep_local_state_comment) state=$v ;;
		wsrep_cluster_status) cluster=$v ;;
		wsrep_ready) ready=$v ;;
		esac
	done <<<"$out"
	printf '%s %s %s\n' "$state" "$cluster" "$ready"
}

# Ready: the node is Synced in the primary component and takes queries.
harness__galera_ready() {
	[ "$(harness_galera_state "$4" "$5")" = "Synced Primary ON" ]
}

# harness_galera_wait NAME K STATE SECONDS: polls node K until
# harness_galera_state prints STATE (a glob); fails after SECONDS.
harness_galera_wait() {
	local -
	set +e
	local deadline now
	deadline=$(($(harness_now_ms) + ${4:-30} * 1000))
	while :; do
		now=$(harness_galera_state "$1" "$2")
		# shellcheck disable=SC2254 # STATE is a glob on purpose
		case $now in $3) return 0 ;; esac
		if [ "$(harness_now_ms)" -ge "$deadline" ]; then
			harness__error "galera node $1$2 is '${now:-not answering}', not '$3' after ${4:-30} s"
			return 1
		fi
		sleep 0.1
	done
}

# harness__galera_recover BASE NAME K: after a crash (grastate.dat's seqno
# -1) the node's position is only in InnoDB: mariadbd --wsrep-recover reads
# it (as the Debian service's galera_recovery does), so that the node
# rejoins by IST instead of a full SST. Sets harness__galera_pos
# (UUID:SEQNO), empty when none was found.
harness__galera_recover() {
	local base=$1 port
	harness__galera_pos=
	read -r port <"$base/mariadb.port" 2>/dev/null || port=0
	harness__galera_cmd "$port" "$base" "$base/recover.sock" "$2" "$3" \
		--wsrep-recover --log-error="$base/recover.log" || return 1
	timeout 120 "${harness__cmd[@]}" </dev/null >>"$base/mariadbd.out" 2>&1
	harness__galera_pos=$(sed -n 's/.*WSREP: Recovered position: *\([^ ]*\).*/\1/p' \
		"$base/recover.log" 2>/dev/null | tail -n 1)
	# An all-zero UUID or seqno -1: nothing to recover from.
	case $harness__galera_pos in
	00000000-0000-0000-0000-000000000000:* | *:-1) harness__galera_pos= ;;
	esac
}

# harness_start_galera_node NAME K [MARIADBD OPTIONS...]: starts node K of
# cluster NAME (made by harness_start_galera), or restarts it after
# harness_stop_mariadb NAMEK or harness_kill mariadb-NAMEK, and returns once
# it is Synced (HARNESS_START_TIMEOUT_GALERA, 120 s). A node that crashed is
# first run with --wsrep-recover and started at the position found, so it
# rejoins by IST. Options go to mariadbd (--wsrep-new-cluster bootstraps).
harness_start_galera_node() {
	local -
	set +e
	local name=${1:-} k=${2:-} base sock t0 how=started
	local -a extra=()
	harness__need_dir || return 1
	if [ ! -s "$HARNESS_DIR/$name.galera" ] || [ -z "$k" ]; then
		harness__error "usage: harness_start_galera_node NAME K [OPTIONS...] (after harness_start_galera NAME N)"
		return 1
	fi
	shift 2
	harness__instance mariadb "$name$k" || return 1
	base=$harness__idir sock=$harness__isock
	if harness_running "$harness__iname"; then
		return 0
	fi
	t0=$(harness_now_ms)
	if grep -q '^seqno: *-1' "$base/data/grastate.dat" 2>/dev/null; then
		harness__galera_recover "$base" "$name" "$k" || return 1
		if [ -n "$harness__galera_pos" ]; then
			extra=(--wsrep-start-position="$harness__galera_pos")
			how="recovered at $harness__galera_pos ($(($(harness_now_ms) - t0)) ms) and restarted"
		fi
	elif [ -f "$base/data/grastate.dat" ]; then
		how=restarted
	fi
	harness__start_server --detach "$harness__iname" "galera node $name$k" \
		"$harness__iport" "${HARNESS_START_TIMEOUT_GALERA:-120}" \
		"$base/error.log" "$base/mariadbd.out" harness__galera_cmd \
		harness__galera_ready "$base" "$sock" "$name" "$k" "$@" \
		"${extra[@]}" || return 1
	harness__export
	printf '# harness: galera node %s%s %s on 127.0.0.1:%s, Synced in %s ms\n' \
		"$name" "$k" "$how" "$harness__port" "$(($(harness_now_ms) - t0))"
}

# harness_start_galera NAME [N]: a MariaDB Galera cluster of N nodes (3)
# on loopback: node K is mariadb NAMEK (its files in $HARNESS_DIR/NAMEK,
# recorded as mariadb-NAMEK, so harness_sql_on NAMEK, harness_stop_mariadb
# NAMEK and harness_kill mariadb-NAMEK work), each with four ports from the
# kernel (MySQL, gcomm, IST, SST). Node 1 bootstraps the cluster
# (--wsrep-new-cluster) and gets the database, users and schema as
# harness_start_mariadb does; the others join it by SST (rsync), one after
# the other. Returns once all are Synced. Exports GALERA_NODES_<NAME> (the
# "127.0.0.1:PORT ..." list for mysql_nodes, in node order) and
# MYSQL_PORT_<NAME><K> / MYSQL_SOCKET_<NAME><K>.
harness_start_galera() {
	local -
	set +e
	local name=${1:-} n=${2:-3} k base t0 cluster='' nodes='' var
	harness__need_dir || return 1
	harness__check_name harness_start_galera "$name" || return 1
	if [ -z "$n" ] || [ -n "${n//[0-9]/}" ] || [ "$n" -lt 1 ]; then
		harness__error "usage: harness_start_galera NAME [N]"
		return 1
	fi
	if [ -e "$HARNESS_DIR/$name.galera" ]; then
		harness__error "galera cluster $name exists: restart its nodes with harness_start_galera_node"
		return 1
	fi
	harness__galera_prepare || return 1
	t0=$(harness_now_ms)
	for k in $(seq 1 "$n"); do
		harness__instance mariadb "$name$k" || return 1
		base=$harness__idir
		mkdir -p "$base" || return 1
		# Node 1's datadir is installed; a joiner's is filled by its SST.
		if [ "$k" = 1 ]; then
			harness__mariadb_datadir "$base/data" "$base/install.log" || return 1
		else
			mkdir -p "$base/data" || return 1
		fi
		harness_free_port >"$harness__iport" || return 1
		printf '%s %s %s\n' "$(harness_free_port)" "$(harness_free_port)" \
			"$(harness_free_port)" >"$base/galera.ports" || return 1
		if [ "$harness__galera_user" != "$harness__user" ]; then
			chown -R "$harness__galera_user:" "$base" || return 1
		fi
		read -r var _ <"$base/galera.ports"
		cluster+=${cluster:+,}127.0.0.1:$var
		nodes+=${nodes:+ }127.0.0.1:$(cat "$harness__iport")
	done
	printf '%s\n' "$cluster" >"$HARNESS_DIR/$name.galera" || return 1
	harness_start_galera_node "$name" 1 --wsrep-new-cluster || return 1
	harness__instance mariadb "${name}1"
	harness__mariadb_setup "$harness__isock" || return 1
	: >"$harness__iready"
	for k in $(seq 2 "$n"); do
		harness_start_galera_node "$name" "$k" || return 1
	done
	var=GALERA_NODES_${name^^}
	printf -v "$var" '%s' "$nodes"
	export "${var?}"
	harness__export
	printf '# harness: galera cluster %s of %s nodes (%s) up in %s ms\n' \
		"$name" "$n" "$nodes" "$(($(harness_now_ms) - t0))"
}

# harness__sentinel_cmd PORT DIR MASTER_NAME MASTER_PORT QUORUM: the
# configuration is written the first time only: Sentinel rewrites it with
# what it learns (replicas, other sentinels, the epoch), which a restart
# keeps.
harness__sentinel_cmd() {
	local conf=$2/sentinel.conf
	if [ ! -f "$conf" ]; then
		cat >"$conf" <<-EOC || return 1
		sentinel monitor $3 127.0.0.1 $4 $5
		sentinel down-after-milliseconds $3 ${HARNESS_SENTINEL_DOWN_AFTER_MS:-1000}
		sentinel failover-timeout $3 ${HARNESS_SENTINEL_FAILOVER_TIMEOUT_MS:-3000}
		sentinel parallel-syncs $3 1
		EOC
	fi
	harness__cmd=(redis-server "$conf" --sentinel --bind 127.0.0.1
		--port "$1" --daemonize no --dir "$2" --logfile "$2/sentinel.log")
}

harness__sentinel_ready() {
	[ "$(timeout 2 redis-cli -h 127.0.0.1 -p "$1" ping 2>/dev/null)" = PONG ]
}

# harness_start_sentinel NAME MASTER_NAME MASTER_PORT [QUORUM]: a Redis
# Sentinel (redis-server --sentinel) on a loopback port, monitoring the
# master 127.0.0.1:MASTER_PORT as MASTER_NAME with QUORUM (2),
# down-after-milliseconds HARNESS_SENTINEL_DOWN_AFTER_MS (1000) and
# failover-timeout HARNESS_SENTINEL_FAILOVER_TIMEOUT_MS (3000). Its files in
# $HARNESS_DIR/NAME (sentinel.conf, sentinel.log, sentinel.port), recorded as
# sentinel-NAME, its port exported as SENTINEL_PORT_<NAME>. Again after a
# stop: restarts on its port with the configuration it rewrote.
harness_start_sentinel() {
	local -
	set +e
	local name=${1:-} master=${2:-} mport=${3:-} quorum=${4:-2} dir var t0
	harness__need_dir || return 1
	harness__check_name harness_start_sentinel "$name" || return 1
	if [ -z "$master" ] || [ -z "$mport" ]; then
		harness__error "usage: harness_start_sentinel NAME MASTER_NAME MASTER_PORT [QUORUM]"
		return 1
	fi
	if harness_running "sentinel-$name"; then
		return 0
	fi
	dir=$HARNESS_DIR/$name
	mkdir -p "$dir" || return 1
	t0=$(harness_now_ms)
	harness__start_server --detach "sentinel-$name" "sentinel $name" \
		"$dir/sentinel.port" "${HARNESS_START_TIMEOUT_REDIS:-10}" \
		"$dir/sentinel.log" "$dir/sentinel.out" harness__sentinel_cmd \
		harness__sentinel_ready "$dir" "$master" "$mport" "$quorum" || return 1
	var=SENTINEL_PORT_${name^^}
	printf -v "$var" '%s' "$harness__port"
	export "${var?}"
	harness__export
	printf '# harness: sentinel %s on 127.0.0.1:%s (master %s at 127.0.0.1:%s, quorum %s) in %s ms\n' \
		"$name" "$harness__port" "$master" "$mport" "$quorum" \
		"$(($(harness_now_ms) - t0))"
}

# harness_sentinel NAME ARGS...: redis-cli against sentinel NAME.
harness_sentinel() {
	local -
	set +e
	local port
	harness__need_dir || return 1
	if ! read -r port 2>/dev/null <"$HARNESS_DIR/${1:-}/sentinel.port"; then
		harness__error "sentinel ${1:-(no name)} was never started"
		return 1
	fi
	shift
	redis-cli -h 127.0.0.1 -p "$port" "$@"
}

# harness_kill NAME...: SIGKILL the recorded processes (a crash, no
# shutdown) and wait until they are gone (5 s at most each).
harness_kill() {
	local -
	set +e
	local name deadline rc=0
	harness__need_dir || return 1
	for name in "$@"; do
		if ! harness_running "$name"; then
			harness__error "$name is not running"
			rc=1
			continue
		fi
		kill -KILL "$HARNESS_PID" 2>/dev/null
	done
	deadline=$(($(harness_now_ms) + 5000))
	for name in "$@"; do
		while harness_running "$name"; do
			if [ "$(harness_now_ms)" -ge "$deadline" ]; then
				harness__error "$name (PID $HARNESS_PID) survived SIGKILL"
				return 1
			fi
			sleep 0.02
		done
		rm -f "$HARNESS_DIR/pids/$name"
	done
	return "$rc"
}
