# shellcheck shell=bash disable=SC2034,SC2154 # the parts of the harness share its variables
# core.sh - what every server of the harness (tools/harness.sh) shares:
# the records of the processes started (PID and start time), stopping and
# killing them, the folder and its cleanup, the environment file, ports, and
# starting one server and waiting until it is ready.

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

# Prints a free loopback port below the kernel's ephemeral range (a
# restart on it never finds it taken by an outgoing connection).
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
	# An EXIT trap already there (a test's TAP plan: tests/lib/tap.sh) runs
	# after the cleanup (harness__at_exit).
	local -a harness__prev=()
	eval "harness__prev=($(trap -p EXIT))"
	harness__after_cleanup=${harness__prev[2]:-}
	trap harness__at_exit EXIT
	# Turn signals into exit, so the EXIT trap runs.
	trap 'exit 129' HUP
	trap 'exit 130' INT
	trap 'exit 143' TERM
	mkdir "$HARNESS_DIR/pids" || return 1
	harness_export_env
}

# The EXIT trap of harness_init: the cleanup, then the trap that was there
# before, each seeing the exit status as $?; errexit off, which holds in
# traps too and would end this one at the first step that fails.
harness__at_exit() {
	local rc=$?
	set +e
	(exit "$rc")
	harness_cleanup
	if [ -n "$harness__after_cleanup" ]; then
		(exit "$rc")
		eval "$harness__after_cleanup"
	fi
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
