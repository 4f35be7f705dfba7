# shellcheck shell=bash disable=SC2034,SC2154 # the parts of the harness share its variables
# sentinel.sh - the tests' Redis Sentinels (tests/lib/harness.sh).

# ---- Redis Sentinel ---------------------------------------------------------

# harness__sentinel_cmd PORT DIR MASTER_NAME MASTER_PORT QUORUM: the
# configuration is written the first time only: Sentinel rewrites it with
# what it learns (replicas, other sentinels, the epoch), which a restart
# keeps.
harness__sentinel_cmd() {
	local conf=$2/sentinel.conf
	if [ ! -f "$conf" ]; then
		cat >"$conf" <<-EOC || return 1
		sentinel monitor $3 ${HARNESS_SENTINEL_MASTER_HOST:-127.0.0.1} $4 $5
		sentinel down-after-milliseconds $3 ${HARNESS_SENTINEL_DOWN_AFTER_MS:-1000}
		sentinel failover-timeout $3 ${HARNESS_SENTINEL_FAILOVER_TIMEOUT_MS:-3000}
		sentinel parallel-syncs $3 1
		EOC
	fi
	harness__address_bind "$2" || return 1
	harness__cmd=(redis-server "$conf" --sentinel "${harness__bind[@]}"
		--port "$1" --daemonize no --dir "$2" --logfile "$2/sentinel.log")
}

harness__sentinel_ready() {
	[ "$(timeout 2 redis-cli -h 127.0.0.1 -p "$1" ping 2>/dev/null)" = PONG ]
}

# harness_start_sentinel NAME MASTER_NAME MASTER_PORT [QUORUM]: a Redis
# Sentinel (redis-server --sentinel) on a loopback port, monitoring the
# master 127.0.0.1:MASTER_PORT (HARNESS_SENTINEL_MASTER_HOST instead of
# 127.0.0.1, and HARNESS_REDIS_ADDRESS, as for harness_start_redis, the
# first time) as MASTER_NAME with QUORUM (2),
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
