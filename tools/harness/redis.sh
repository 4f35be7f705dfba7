# shellcheck shell=bash disable=SC2034,SC2154 # the parts of the harness share its variables
# redis.sh - the harness's redis-server (tools/harness.sh): start, stop,
# redis-cli against it.

# ---- redis ------------------------------------------------------------------

# harness__address_bind DIR: sets harness__bind to the bind options of the
# redis-server (or sentinel) whose files are in DIR: 127.0.0.1 and, when
# DIR/address names one, that address too, which its own connections
# (replication, a sentinel's links) leave from (bind-source-addr), so that a
# test in a network namespace of its own can cut one server off from the
# others by their addresses (make chaos-ha). The first start writes
# DIR/address from HARNESS_REDIS_ADDRESS; a restart reads it back.
harness__address_bind() {
	local addr=
	if [ ! -f "$1/address" ] && [ -n "${HARNESS_REDIS_ADDRESS:-}" ]; then
		printf '%s\n' "$HARNESS_REDIS_ADDRESS" >"$1/address" || return 1
	fi
	[ -f "$1/address" ] && read -r addr <"$1/address"
	harness__bind=(--bind 127.0.0.1 ${addr:+"$addr"})
	# Protected mode takes only 127.0.0.1 for loopback.
	[ -z "$addr" ] || harness__bind+=(--bind-source-addr "$addr" --protected-mode no)
}

# harness__redis_cmd PORT DIR SOCKET
harness__redis_cmd() {
	harness__address_bind "$2" || return 1
	# DEBUG SLEEP (local clients only) lets tests stall a reply.
	harness__cmd=(redis-server "${harness__bind[@]}" --port "$1"
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
