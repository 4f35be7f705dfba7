# shellcheck shell=bash disable=SC2034,SC2154 # the parts of the harness share its variables
# payhook.sh - the harness's payhook pools (tools/harness.sh): conf/ files
# filled in, pools started by spawn-fcgi or payhook's own master and their
# processes recorded.

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
