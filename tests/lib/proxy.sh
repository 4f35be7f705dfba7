# shellcheck shell=bash disable=SC2034,SC2154 # the parts of the harness share its variables
# proxy.sh - the tests' part of the harness (tests/lib/harness.sh) in
# front of or instead of a backend: silent listeners (tools/freeport
# --listen-silent) and TCP proxies (tests/servers/tcpproxy).

harness__tcpproxy=$top_builddir/tests/servers/tcpproxy

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
