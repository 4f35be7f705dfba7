# shellcheck shell=bash
# harness.sh - sourced by payhook's integration and end-to-end test scripts:
# starts real redis-server and mariadbd in a temporary folder on loopback ports
# chosen by the kernel, and stops them (by PID, only those it started) on exit.
#
#   . "$top_srcdir/tests/harness.sh"
#   harness_init || exit 99          # temp folder + cleanup trap on EXIT
#   harness_start_redis || exit 99   # exports REDIS_PORT, PAYHOOK_REDIS_*
#   harness_start_mariadb || exit 99 # exports MYSQL_*, PAYHOOK_MYSQL_*
#   harness_sql "SELECT COUNT(*) FROM payments"
#
# Every function prints why on stderr and returns non-zero when it fails; stdout
# only gets one "# harness: ..." line per server started. The library works
# with and without set -euo pipefail: the functions turn errexit off inside
# (local -) and report failure by their status.
#
# Functions:
#   harness_init                 make HARNESS_DIR, install the cleanup traps
#   harness_cleanup              stop every server started, remove HARNESS_DIR
#                                (kept when HARNESS_KEEP=1); runs on EXIT
#   harness_start_redis          start redis-server, or restart it on its port
#   harness_stop_redis           stop it (TERM, wait until gone)
#   harness_start_mariadb        start mariadbd (installed, database, users and
#                                db/schema.sql loaded the first time), or
#                                restart it on the same port and datadir
#   harness_stop_mariadb         stop it (TERM, wait until gone)
#   harness_pause NAME / harness_resume NAME
#                                SIGSTOP / SIGCONT a server (redis, mariadb):
#                                a backend that accepts but never answers
#   harness_sql "SQL"            run SQL as the admin account over the socket
#                                in database payhook, print the rows
#   harness_redis ARGS...        redis-cli against the test redis
#   harness_fill SRC DST NAME=VALUE...
#                                a conf/ file with its @NAME@ placeholders set
#   harness_silent_listener NAME a loopback port that accepts connections and
#                                never answers; exports SILENT_PORT_<NAME>
#                                (NAME upper-cased)
#   harness_stop_silent_listener NAME
#   harness_export_env           write the environment to $HARNESS_DIR/env
#   harness_attach               use the servers of an existing HARNESS_DIR
#                                (what tests/harness-ctl.sh does)
#
# Exported: HARNESS_DIR; REDIS_PORT, REDIS_SOCKET, PAYHOOK_REDIS_HOST,
# PAYHOOK_REDIS_PORT; MYSQL_PORT, MYSQL_SOCKET, PAYHOOK_MYSQL_HOST,
# PAYHOOK_MYSQL_PORT, PAYHOOK_MYSQL_USER, PAYHOOK_MYSQL_PASSWORD,
# PAYHOOK_MYSQL_DATABASE; SILENT_PORT_<NAME>.
#
# $HARNESS_DIR/env holds them as NAME=VALUE lines (values quoted by printf %q,
# which leaves the harness's own values as they are), rewritten after every
# start by the owning script; a C test program reads it or its environment.
#
# Settings (environment): HARNESS_KEEP=1 keeps the folder; HARNESS_CACHE=DIR
# keeps a pristine mariadb-install-db datadir there (one per server version)
# and copies it instead of installing each time (install-db measured at about
# 0.7-1.8 s here, the copy at 0.2 s, so it is off by default);
# HARNESS_START_TIMEOUT_REDIS (10), HARNESS_START_TIMEOUT_MARIADB (30) and
# HARNESS_STOP_TIMEOUT (10), in seconds.
#
# Layout of $HARNESS_DIR: pids/NAME ("PID STARTTIME" of each server we run, so
# a recycled PID is never signalled), redis/ (log), redis.sock, redis.port,
# mariadb/ (data/, error.log, install.log), mysql.sock, mariadb.port,
# mariadb.ready (first-start setup done), silent-NAME.port, env.

# ---- locations --------------------------------------------------------------

# top_srcdir and top_builddir come from the Makefile's test environment; run by
# hand, the source tree is the one holding this file and the build tree is the
# current folder when it has tests/freeport, else the source tree.
harness__here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
if [ -z "${top_srcdir:-}" ]; then
	top_srcdir=$(dirname "$harness__here")
fi
if [ -z "${top_builddir:-}" ]; then
	if [ -x "$PWD/tests/freeport" ]; then
		top_builddir=$PWD
	else
		top_builddir=$top_srcdir
	fi
fi
export top_srcdir top_builddir
harness__freeport=$top_builddir/tests/freeport
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
harness__now_ms() {
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
harness__starttime() {
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

# Records that we started process $2 as server $1.
harness__record() {
	local start
	start=$(harness__starttime "$2") || start=gone
	printf '%s %s\n' "$2" "$start" >"$HARNESS_DIR/pids/$1"
}

# Succeeds when server $1 is a live process we started; sets harness__pid.
harness__running() {
	local file=$HARNESS_DIR/pids/$1 pid start now
	harness__pid=
	[ -f "$file" ] || return 1
	read -r pid start <"$file" || return 1
	now=$(harness__starttime "$pid") || return 1
	[ "$now" = "$start" ] || return 1
	harness__pid=$pid
}

# Stops the servers named in the arguments: TERM (and CONT, in case one is
# paused), up to HARNESS_STOP_TIMEOUT seconds for all of them, then KILL.
# Only PIDs whose start time still matches our record are signalled.
harness__stop() {
	local name deadline sig left
	local -a live=()
	for name in "$@"; do
		if harness__running "$name"; then
			# It may exit (and be reaped) between the two.
			kill -TERM "$harness__pid" 2>/dev/null || true
			kill -CONT "$harness__pid" 2>/dev/null || true
			live+=("$name")
		else
			rm -f "$HARNESS_DIR/pids/$name"
		fi
	done
	[ "${#live[@]}" -gt 0 ] || return 0
	for sig in TERM KILL; do
		if [ "$sig" = KILL ]; then
			deadline=$(($(harness__now_ms) + 5000))
		else
			deadline=$(($(harness__now_ms) + ${HARNESS_STOP_TIMEOUT:-10} * 1000))
		fi
		while :; do
			left=0
			for name in "${live[@]}"; do
				if harness__running "$name"; then
					left=1
					if [ "$sig" = KILL ]; then
						kill -KILL "$harness__pid" 2>/dev/null || true
					fi
				fi
			done
			[ "$left" = 1 ] || break
			[ "$(harness__now_ms)" -lt "$deadline" ] || break
			sleep 0.05
		done
		[ "$left" = 1 ] || break
		if [ "$sig" = TERM ]; then
			harness__error "server(s) ${live[*]} ignored SIGTERM for ${HARNESS_STOP_TIMEOUT:-10} s: sending SIGKILL"
		fi
	done
	for name in "${live[@]}"; do
		if harness__running "$name"; then
			harness__error "$name (PID $harness__pid) survived SIGKILL"
			return 1
		fi
		rm -f "$HARNESS_DIR/pids/$name"
	done
}

# Waits until "$4..." prints $3, at most $2 seconds, while server $1 lives.
# Returns 0 when ready, 1 on timeout, 2 when the server exited.
harness__wait_ready() {
	local name=$1 timeout=$2 want=$3 deadline got
	shift 3
	deadline=$(($(harness__now_ms) + timeout * 1000))
	while :; do
		got=$("$@" 2>/dev/null) || got=
		if [ "$got" = "$want" ]; then
			return 0
		fi
		harness__running "$name" || return 2
		[ "$(harness__now_ms)" -lt "$deadline" ] || return 1
		sleep 0.05
	done
}

harness__log_tail() {
	if [ -f "$1" ]; then
		printf 'harness: last lines of %s:\n' "$1" >&2
		tail -n 15 "$1" | sed 's/^/  | /' >&2
	fi
}

# Prints a free loopback port chosen by the kernel.
harness__free_port() {
	if [ ! -x "$harness__freeport" ]; then
		harness__error "$harness__freeport not built: run 'make tests/freeport' (or make check)"
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
		harness__port=$(harness__free_port)
	fi
}

harness__export_if_owner() {
	if [ "$harness__owner" = 1 ]; then
		harness_export_env
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

# Stops every server this folder records (started here or by harness-ctl.sh)
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
		harness__stop "${names[@]}"
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

# Writes the PAYHOOK_* and SILENT_PORT_* variables and the harness's own to
# $HARNESS_DIR/env as NAME=VALUE lines. Replaced atomically.
harness_export_env() {
	local -
	set +e
	local name tmp
	harness__need_dir || return 1
	tmp=$HARNESS_DIR/env.new
	: >"$tmp" || return 1
	local -a names=(HARNESS_DIR REDIS_PORT REDIS_SOCKET MYSQL_PORT MYSQL_SOCKET)
	for name in $(compgen -e); do
		case $name in
		PAYHOOK_* | SILENT_PORT_*) names+=("$name") ;;
		esac
	done
	for name in "${names[@]}"; do
		if [ -n "${!name+set}" ]; then
			printf '%s=%q\n' "$name" "${!name}" >>"$tmp"
		fi
	done
	mv -f "$tmp" "$HARNESS_DIR/env"
}

harness_pause() {
	local -
	set +e
	harness__need_dir || return 1
	harness__running "$1" || {
		harness__error "$1 is not running"
		return 1
	}
	kill -STOP "$harness__pid"
}

harness_resume() {
	local -
	set +e
	harness__need_dir || return 1
	harness__running "$1" || {
		harness__error "$1 is not running"
		return 1
	}
	kill -CONT "$harness__pid"
}

# ---- redis ------------------------------------------------------------------

# Starts redis-server on 127.0.0.1 (and a unix socket), or restarts it on the
# port it had. Already running: does nothing.
harness_start_redis() {
	local -
	set +e
	local dir port t0 pid try status
	harness__need_dir || return 1
	if harness__running redis; then
		return 0
	fi
	dir=$HARNESS_DIR/redis
	mkdir -p "$dir" || return 1
	t0=$(harness__now_ms)
	for try in 1 2 3 4 5; do
		harness__port_for "$HARNESS_DIR/redis.port" || return 1
		port=$harness__port
		# DEBUG SLEEP (local clients only) lets tests stall a reply.
		# setsid: a server restarted from inside a test (harness-ctl.sh)
		# must not die with the test's process group (Check kills it).
		setsid redis-server --bind 127.0.0.1 --port "$port" \
			--unixsocket "$HARNESS_DIR/redis.sock" --unixsocketperm 700 \
			--save '' --appendonly no --daemonize no \
			--enable-debug-command local \
			--dir "$dir" --logfile "$dir/redis.log" \
			</dev/null >>"$dir/redis.out" 2>&1 &
		pid=$!
		disown "$pid"
		harness__record redis "$pid"
		status=0
		# Asked over our own socket: whatever else may answer on the
		# TCP port, redis listens there only once it holds the port too.
		harness__wait_ready redis "${HARNESS_START_TIMEOUT_REDIS:-10}" PONG \
			timeout 2 redis-cli -s "$HARNESS_DIR/redis.sock" ping ||
			status=$?
		if [ "$status" = 0 ]; then
			break
		fi
		harness__stop redis
		if [ "$status" = 1 ]; then
			harness__log_tail "$dir/redis.log"
			harness__error "redis-server did not answer PING within ${HARNESS_START_TIMEOUT_REDIS:-10} s"
			return 1
		fi
		# It exited: most likely another process took the port between
		# freeport and bind. Take a new one (or, on a restart, wait).
		if [ "$try" = 5 ]; then
			harness__log_tail "$dir/redis.log"
			harness__log_tail "$dir/redis.out"
			harness__error "redis-server failed to start on 127.0.0.1:$port"
			return 1
		fi
		if [ "$harness__fixed" = 1 ]; then
			sleep 0.5
		fi
	done
	printf '%s\n' "$port" >"$HARNESS_DIR/redis.port"
	REDIS_PORT=$port
	REDIS_SOCKET=$HARNESS_DIR/redis.sock
	PAYHOOK_REDIS_HOST=127.0.0.1
	PAYHOOK_REDIS_PORT=$port
	export REDIS_PORT REDIS_SOCKET PAYHOOK_REDIS_HOST PAYHOOK_REDIS_PORT
	harness__export_if_owner
	printf '# harness: redis-server %s on 127.0.0.1:%s in %s ms\n' \
		"$([ "$harness__fixed" = 1 ] && echo restarted || echo started)" \
		"$port" "$(($(harness__now_ms) - t0))"
}

harness_stop_redis() {
	local -
	set +e
	harness__need_dir || return 1
	harness__stop redis
}

harness_redis() {
	if [ -z "${REDIS_PORT:-}" ]; then
		harness__error "redis is not started"
		return 1
	fi
	redis-cli -h 127.0.0.1 -p "$REDIS_PORT" "$@"
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

# Fills the new datadir $1: a copy of the HARNESS_CACHE template when that is
# set (installed once per server version), else a fresh install.
harness__mariadb_datadir() {
	local data=$1 log=$HARNESS_DIR/mariadb/install.log tpl tmp version
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

# The first start's setup: database, application users, schema.
harness__mariadb_setup() {
	local sock=$HARNESS_DIR/mysql.sock h
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

# Starts mariadbd on 127.0.0.1 with its socket in HARNESS_DIR; the first time
# it installs the datadir, creates database payhook, users payhook@127.0.0.1
# and payhook@localhost (password payhook-test) and loads db/schema.sql. Again
# after harness_stop_mariadb: restarts on the same port and datadir. Already
# running: does nothing.
harness_start_mariadb() {
	local -
	set +e
	local base data sock port t0 t1 t2 pid try status install_ms=0 setup_ms=0
	harness__install_how="existing datadir"
	local -a extra=()
	harness__need_dir || return 1
	if harness__running mariadb; then
		return 0
	fi
	base=$HARNESS_DIR/mariadb
	data=$base/data
	sock=$HARNESS_DIR/mysql.sock
	mkdir -p "$base" || return 1
	t0=$(harness__now_ms)
	if [ ! -d "$data" ]; then
		harness__mariadb_datadir "$data" || return 1
		install_ms=$(($(harness__now_ms) - t0))
	fi
	t1=$(harness__now_ms)
	for try in 1 2 3 4 5; do
		harness__port_for "$HARNESS_DIR/mariadb.port" || return 1
		port=$harness__port
		# On a restart the port may still be held for a moment: let
		# mariadbd retry the bind itself.
		extra=()
		if [ "$harness__fixed" = 1 ]; then
			extra=(--port-open-timeout=10)
		fi
		setsid mariadbd --no-defaults --datadir="$data" --socket="$sock" \
			--port="$port" --bind-address=127.0.0.1 \
			--user="$harness__user" --pid-file="$base/mariadbd.pid" \
			--log-error="$base/error.log" --skip-log-bin \
			--skip-name-resolve --max-connections=300 \
			--character-set-server=utf8mb4 \
			--collation-server=utf8mb4_general_ci \
			"${harness__innodb_opts[@]}" "${extra[@]}" \
			</dev/null >>"$base/mariadbd.out" 2>&1 &
		pid=$!
		disown "$pid"
		harness__record mariadb "$pid"
		status=0
		harness__wait_ready mariadb "${HARNESS_START_TIMEOUT_MARIADB:-30}" \
			'mysqld is alive' timeout 5 mariadb-admin --no-defaults \
			--socket="$sock" --user="$harness__user" --connect-timeout=2 \
			ping || status=$?
		if [ "$status" = 0 ]; then
			break
		fi
		harness__stop mariadb
		if [ "$status" = 1 ]; then
			harness__log_tail "$base/error.log"
			harness__error "mariadbd did not answer ping within ${HARNESS_START_TIMEOUT_MARIADB:-30} s"
			return 1
		fi
		if [ "$try" = 5 ]; then
			harness__log_tail "$base/error.log"
			harness__log_tail "$base/mariadbd.out"
			harness__error "mariadbd failed to start on 127.0.0.1:$port"
			return 1
		fi
		if [ "$harness__fixed" = 1 ]; then
			sleep 0.5
		fi
	done
	printf '%s\n' "$port" >"$HARNESS_DIR/mariadb.port"
	t2=$(harness__now_ms)
	if [ ! -e "$HARNESS_DIR/mariadb.ready" ]; then
		harness__mariadb_setup || return 1
		: >"$HARNESS_DIR/mariadb.ready"
		setup_ms=$(($(harness__now_ms) - t2))
	fi
	MYSQL_PORT=$port
	MYSQL_SOCKET=$sock
	PAYHOOK_MYSQL_HOST=127.0.0.1
	PAYHOOK_MYSQL_PORT=$port
	PAYHOOK_MYSQL_USER=payhook
	PAYHOOK_MYSQL_PASSWORD=payhook-test
	PAYHOOK_MYSQL_DATABASE=payhook
	export MYSQL_PORT MYSQL_SOCKET PAYHOOK_MYSQL_HOST PAYHOOK_MYSQL_PORT \
		PAYHOOK_MYSQL_USER PAYHOOK_MYSQL_PASSWORD PAYHOOK_MYSQL_DATABASE
	harness__export_if_owner
	if [ "$harness__fixed" = 1 ]; then
		printf '# harness: mariadbd restarted on 127.0.0.1:%s in %s ms\n' \
			"$port" "$((t2 - t1))"
	else
		printf '# harness: mariadbd started on 127.0.0.1:%s in %s ms (%s %s ms, start %s ms, setup %s ms)\n' \
			"$port" "$(($(harness__now_ms) - t0))" "$harness__install_how" \
			"$install_ms" "$((t2 - t1))" "$setup_ms"
	fi
}

harness_stop_mariadb() {
	local -
	set +e
	harness__need_dir || return 1
	harness__stop mariadb
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

# ---- silent listener --------------------------------------------------------

# harness_fill SRC DST NAME=VALUE...: copies a conf/ file SRC to DST with
# every @NAME@ placeholder replaced by VALUE (as the tests and the demo use
# conf/); fails when a placeholder is left.
harness_fill() {
	local src=$1 dst=$2 kv value
	local -a script=()
	shift 2
	for kv in "$@"; do
		value=${kv#*=}
		value=${value//\\/\\\\}
		value=${value//|/\\|}
		value=${value//&/\\&}
		script+=(-e "s|@${kv%%=*}@|$value|g")
	done
	sed "${script[@]}" "$src" >"$dst" || return 1
	if grep -n '@[A-Z_]*@' "$dst" >&2; then
		echo "placeholder left in $dst" >&2
		return 1
	fi
}

# Starts a loopback listener that accepts connections and never answers, for
# timeout tests; exports its port as SILENT_PORT_<NAME> (NAME upper-cased).
harness_silent_listener() {
	local -
	set +e
	local name=${1:-} var out pid port t0 deadline
	harness__need_dir || return 1
	case $name in
	'' | [0-9]* | *[!A-Za-z0-9_]*)
		harness__error "harness_silent_listener: NAME must be letters, digits and _"
		return 1
		;;
	esac
	var=SILENT_PORT_${name^^}
	if harness__running "silent-$name"; then
		harness__error "silent listener $name is already running"
		return 1
	fi
	if [ ! -x "$harness__freeport" ]; then
		harness__error "$harness__freeport not built: run 'make tests/freeport' (or make check)"
		return 1
	fi
	t0=$(harness__now_ms)
	out=$HARNESS_DIR/silent-$name.port
	"$harness__freeport" --listen-silent </dev/null >"$out" \
		2>"$HARNESS_DIR/silent-$name.log" &
	pid=$!
	disown "$pid"
	harness__record "silent-$name" "$pid"
	deadline=$((t0 + 5000))
	port=
	# A complete line (read succeeds) means the port is bound and listening.
	until read -r port 2>/dev/null <"$out"; do
		if ! harness__running "silent-$name" ||
			[ "$(harness__now_ms)" -ge "$deadline" ]; then
			harness__stop "silent-$name"
			harness__log_tail "$HARNESS_DIR/silent-$name.log"
			harness__error "silent listener $name did not start"
			return 1
		fi
		sleep 0.02
	done
	printf -v "$var" '%s' "$port"
	export "${var?}"
	harness__export_if_owner
	printf '# harness: silent listener %s on 127.0.0.1:%s in %s ms\n' \
		"$name" "$port" "$(($(harness__now_ms) - t0))"
}

harness_stop_silent_listener() {
	local -
	set +e
	harness__need_dir || return 1
	harness__stop "silent-${1:-}"
}
