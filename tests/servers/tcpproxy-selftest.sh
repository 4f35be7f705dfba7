#!/bin/bash
# tcpproxy-selftest.sh - proves each tcpproxy control command against real
# redis-server instances on kernel-chosen loopback ports.
#
#   tests/servers/tcpproxy-selftest.sh path/to/built/tcpproxy
#
# (Without an argument, as automake's TESTS runs it: $top_builddir/tests/servers/tcpproxy.)
# Builds nothing; takes the ports from tools/freeport of the same build tree
# (FREEPORT overrides it) and
# talks to the control socket with "tcpproxy --send", so it needs no python3
# (a fresh Debian may lack it): only bash, redis-server, redis-cli and
# timeout; perl (always there on Debian: perl-base) for the half-close and
# 1100-connection checks, which are skipped without it. Prints TAP
# (tests/lib/tap.sh: "ok - ..." or "not ok - ..." per check, the plan at exit)
# and exits 1 when any check failed, 77 (automake's "skip") when a tool is
# missing, 99 when the setup itself fails. Everything it starts is stopped by
# PID on exit and its temporary folder removed (kept with
# TCPPROXY_SELFTEST_KEEP=1, for the logs). It takes about 3 s.

# The checks are shell code in single quotes, run by eval in check().
# shellcheck disable=SC2016
set -eu
# ok, not_ok, skip: the TAP lines, and the plan at exit.
# shellcheck source=../lib/tap.sh
. "${top_srcdir:-$(cd "$(dirname "$0")/../.." && pwd)}/tests/lib/tap.sh"

proxy_bin=${1:-${top_builddir:-.}/tests/servers/tcpproxy}
freeport_bin=${FREEPORT:-$(dirname "$(dirname "$(dirname "$proxy_bin")")")/tools/freeport}
for bin in "$proxy_bin" "$freeport_bin"; do
	if [ ! -x "$bin" ]; then
		echo "# setup failed: no $bin (usage: $0 path/to/built/tcpproxy)" >&2
		exit 99
	fi
done
for tool in redis-server redis-cli timeout; do
	command -v "$tool" >/dev/null 2>&1 || skip "$tool is not installed"
done

tmp=$(mktemp -d "${TMPDIR:-/tmp}/tcpproxy-selftest.XXXXXX")
pids=() # everything started in the background and not reaped yet

cleanup() {
	local pid
	for pid in "${pids[@]}"; do
		kill -TERM "$pid" 2>/dev/null || true
	done
	for pid in "${pids[@]}"; do
		wait "$pid" 2>/dev/null || true
	done
	if [ "${TCPPROXY_SELFTEST_KEEP:-0}" = 1 ]; then
		echo "# kept $tmp"
	else
		rm -rf "$tmp"
	fi
}
tap_cleanup cleanup
trap 'exit 130' INT # through the EXIT trap, so nothing is left running
trap 'exit 143' TERM

# Removes a PID we reaped ourselves, so cleanup never signals a recycled one.
forget() {
	local pid keep=()
	for pid in "${pids[@]}"; do
		[ "$pid" = "$1" ] || keep+=("$pid")
	done
	pids=("${keep[@]}")
}

# check DESCRIPTION 'SHELL CODE': ok when the code succeeds. Evaluated inside
# the if, so a failing test in it counts as "not ok" instead of ending the
# script through set -e.
check() {
	if eval "$2"; then ok "$1"; else not_ok "$1"; fi
}
setup_failed() {
	echo "# setup failed: $*" >&2
	exit 99
}

now_ms() { date +%s%3N; }
free_port() { "$freeport_bin"; }

# start_redis NAME: a redis-server in $tmp/NAME; sets started_port.
start_redis() {
	local port
	port=$(free_port) || setup_failed "no free port"
	mkdir -p "$tmp/$1"
	redis-server --port "$port" --bind 127.0.0.1 --save '' --appendonly no \
		--dir "$tmp/$1" --logfile "$tmp/$1/redis.log" &
	pids+=($!)
	for _ in $(seq 500); do # 10 s
		if [ "$(redis-cli -h 127.0.0.1 -p "$port" PING 2>/dev/null)" = PONG ]; then
			started_port=$port
			return 0
		fi
		sleep 0.02
	done
	setup_failed "redis-server $1 on port $port did not answer"
}

# start_proxy OUT TCPPROXY-ARGS...: sets proxy_pid and proxy_port. The proxy
# gets the caller's stdin: "<&0" keeps bash from giving a background command
# /dev/null instead.
start_proxy() {
	local out=$1
	shift
	"$proxy_bin" "$@" <&0 >"$out" 2>>"$tmp/proxy.log" &
	proxy_pid=$!
	pids+=("$proxy_pid")
	for _ in $(seq 1000); do # 20 s: slow under valgrind
		# The background job may not have made $out yet: under set -e a
		# failing head would end the script.
		proxy_port=$(head -n 1 "$out" 2>/dev/null) || proxy_port=
		[ -n "$proxy_port" ] && return 0
		sleep 0.02
	done
	setup_failed "tcpproxy printed no port (see $tmp/proxy.log)"
}

# ctl COMMAND...: sends the commands on one control connection (tcpproxy
# --send), prints the reply lines; fails unless every reply is "ok...".
ctl() { "$proxy_bin" --send "$tmp/ctl" "$@" 2>>"$tmp/proxy.log"; }

rcli() { redis-cli -h 127.0.0.1 -p "$proxy_port" "$@"; }
ping_ok() { [ "$(rcli PING 2>/dev/null)" = PONG ]; }
served_port() { rcli CONFIG GET port 2>/dev/null | tail -n 1; }
stat_of() { ctl stats | tr ' ' '\n' | sed -n "s/^$1=//p"; }
# Closed clients take the proxy a moment to notice: wait for connections=0.
idle_stats() {
	for _ in $(seq 250); do
		[ "$(stat_of connections)" = 0 ] && break
		sleep 0.02
	done
	ctl stats
}

# RESP on an open /dev/tcp descriptor: asks CONFIG GET port, prints the value.
fd_served_port() {
	local line
	printf '*3\r\n$6\r\nCONFIG\r\n$3\r\nGET\r\n$4\r\nport\r\n' >&"$1" || return 1
	for _ in 1 2 3 4 5; do
		read -r -t 5 -u "$1" line || return 1
	done
	echo "${line%$'\r'}"
}

# Clients for what redis-cli cannot show, in perl (perl-base: on every
# Debian, where python3 may be missing); bash cannot half-close a /dev/tcp
# connection, nor wait for a descriptor above 1023 (read -t uses select).
# half_close_ok: the reply still arrives after our shutdown(SHUT_WR), then EOF.
half_close_ok() {
	perl -MIO::Socket::INET -e '
		$SIG{ALRM} = sub { exit 5 };
		alarm 5;
		my $s = IO::Socket::INET->new(PeerAddr => "127.0.0.1:$ARGV[0]") or exit 2;
		$s->syswrite("PING\r\n") == 6 or exit 3;
		$s->shutdown(1) or exit 4;
		my ($data, $buf) = ("", "");
		while ($s->sysread($buf, 4096)) { $data .= $buf }
		exit($data eq "+PONG\r\n" ? 0 : 1);
	' "$proxy_port"
}
have_perl() { command -v perl >/dev/null 2>&1; }
# many_ok N: N connections open at once, each gets its PONG (in a subshell
# with the soft fd limit raised).
many_ok() (
	ulimit -n 4096 || exit 1
	perl -MIO::Socket::INET -e '
		$SIG{ALRM} = sub { exit 5 };
		alarm 20;
		my @c = map { IO::Socket::INET->new(PeerAddr => "127.0.0.1:$ARGV[0]")
			or exit 2 } 1 .. $ARGV[1];
		$_->syswrite("PING\r\n") == 6 or exit 3 for @c;
		my $buf;
		$_->sysread($buf, 16) && $buf eq "+PONG\r\n" or exit 1 for @c;
	' "$proxy_port" "$1"
)

start_redis one
port1=$started_port
start_redis two
port2=$started_port
start_proxy "$tmp/proxy.out" --target "127.0.0.1:$port1" --control "$tmp/ctl"
echo "# redis on $port1 and $port2, tcpproxy (pid $proxy_pid) on $proxy_port"

# ---- basics -----------------------------------------------------------------
check "control socket has mode 0600" '[ "$(stat -c %a "$tmp/ctl")" = 600 ]'
check "relays a PING" ping_ok
check "stats counts the relayed bytes" \
	'idle_stats | grep -Eq "^ok connections=0 accepted=1 bytes_up=[1-9][0-9]* bytes_down=[1-9][0-9]*\$"'
check "bad commands get error replies, several commands on one connection" \
	'[ "$(ctl bogus "delay abc" "stall maybe" "target nowhere" stats | cut -c1-6 |
		tr "\n" " ")" = "error: error: error: error: ok con " ]'
check "--send fails on an error reply, succeeds on ok" \
	'! ctl stats bogus >/dev/null && ctl stats >/dev/null'

# ---- target -----------------------------------------------------------------
exec 3<>"/dev/tcp/127.0.0.1/$proxy_port" || setup_failed "connect to the proxy"
check "a connection opened before the switch is served by port $port1" \
	'[ "$(fd_served_port 3)" = "$port1" ]'
check "target switches to the second redis" '[ "$(ctl "target 127.0.0.1:$port2")" = ok ]'
check "new connections reach port $port2" '[ "$(served_port)" = "$port2" ]'
check "the existing connection keeps port $port1" '[ "$(fd_served_port 3)" = "$port1" ]'
exec 3<&-
check "target switches back" '[ "$(ctl "target 127.0.0.1:$port1")" = ok ]'
check "new connections reach port $port1 again" '[ "$(served_port)" = "$port1" ]'

# ---- delay ------------------------------------------------------------------
check "delay 200" '[ "$(ctl "delay 200")" = ok ]'
t0=$(now_ms)
ping_ok || not_ok "PING answered with delay 200"
elapsed=$(($(now_ms) - t0))
check "delay 200 holds a PING round trip >= 400 ms (took $elapsed ms)" \
	'[ "$elapsed" -ge 400 ] && [ "$elapsed" -lt 5000 ]'
check "delay 0" '[ "$(ctl "delay 0")" = ok ]'
t0=$(now_ms)
ping_ok || not_ok "PING answered with delay 0"
elapsed=$(($(now_ms) - t0))
check "delay 0 turns it off (took $elapsed ms)" '[ "$elapsed" -lt 300 ]'

# ---- stall ------------------------------------------------------------------
check "stall on" '[ "$(ctl "stall on")" = ok ]'
rc=0
timeout 0.5 redis-cli -h 127.0.0.1 -p "$proxy_port" PING >/dev/null 2>&1 || rc=$?
check "while stalled a PING times out (rc $rc)" '[ "$rc" = 124 ]'
timeout 10 redis-cli -h 127.0.0.1 -p "$proxy_port" PING >"$tmp/held.out" 2>&1 &
held=$!
pids+=("$held")
sleep 0.3
check "a PING sent while stalled is still waiting after 0.3 s" 'kill -0 "$held"'
check "stall off" '[ "$(ctl "stall off")" = ok ]'
rc=0
wait "$held" || rc=$?
forget "$held"
check "the held PING is answered after stall off (rc $rc)" \
	'[ "$rc" = 0 ] && [ "$(cat "$tmp/held.out")" = PONG ]'
check "a new PING goes through after stall off" ping_ok

# ---- half-close -------------------------------------------------------------
if have_perl; then
	check "half-close: the reply arrives after the client's SHUT_WR, then EOF" half_close_ok
else
	ok "half-close # SKIP no perl"
fi

# ---- drop -------------------------------------------------------------------
rcli SUBSCRIBE x >"$tmp/sub.out" 2>&1 &
sub=$!
pids+=("$sub")
exec 4<>"/dev/tcp/127.0.0.1/$proxy_port" || setup_failed "connect to the proxy"
printf 'PING\r\n' >&4
read -r -t 5 -u 4 line || line=
check "a long-lived /dev/tcp connection is up" '[ "${line%$'"'\r'"'}" = +PONG ]'
for _ in $(seq 250); do # until SUBSCRIBE has its reply
	grep -q '^1$' "$tmp/sub.out" && break
	sleep 0.02
done
check "stats sees the two open connections" '[ "$(stat_of connections)" = 2 ]'
check "drop" '[ "$(ctl drop)" = ok ]'
rc=0
read -r -t 3 -u 4 line 2>/dev/null || rc=$?
check "the /dev/tcp connection is closed at once (read rc $rc, >128 = timeout)" \
	'[ "$rc" -ne 0 ] && [ "$rc" -le 128 ]'
exec 4<&-
for _ in $(seq 150); do
	kill -0 "$sub" 2>/dev/null || break
	sleep 0.02
done
rc=0
if kill -0 "$sub" 2>/dev/null; then rc=running; else wait "$sub" || rc=$?; fi
forget "$sub"
check "redis-cli SUBSCRIBE sees a reset (rc $rc)" \
	'[ "$rc" != running ] && [ "$rc" != 0 ] && grep -q "reset by peer" "$tmp/sub.out"'
check "stats shows no connection left" '[ "$(stat_of connections)" = 0 ]'
check "new connections work after drop" ping_ok

# ---- refuse -----------------------------------------------------------------
check "refuse on" '[ "$(ctl "refuse on")" = ok ]'
t0=$(now_ms)
rc=0
out=$(timeout 5 redis-cli -h 127.0.0.1 -p "$proxy_port" PING 2>&1) || rc=$?
elapsed=$(($(now_ms) - t0))
check "while refusing a PING fails at once (rc $rc, $elapsed ms: $out)" \
	'[ "$rc" != 0 ] && [ "$rc" != 124 ] && [ "$elapsed" -lt 1000 ]'
check "refuse off" '[ "$(ctl "refuse off")" = ok ]'
check "PING goes through after refuse off" ping_ok

# ---- blackhole --------------------------------------------------------------
upstream_conns() {
	redis-cli -h 127.0.0.1 -p "$port1" INFO stats | tr -d '\r' |
		sed -n 's/^total_connections_received://p'
}
check "blackhole on" '[ "$(ctl "blackhole on")" = ok ]'
before=$(upstream_conns)
rc=0
timeout 0.5 redis-cli -h 127.0.0.1 -p "$proxy_port" PING >/dev/null 2>&1 || rc=$?
after=$(upstream_conns)
check "while blackholed a PING hangs (rc $rc)" '[ "$rc" = 124 ]'
check "and redis never saw it (connections $before, then $after counting INFO)" \
	'[ "$after" = $((before + 1)) ]'
check "blackhole off" '[ "$(ctl "blackhole off")" = ok ]'
check "PING goes through after blackhole off" ping_ok

# ---- many connections -------------------------------------------------------
hard=$(ulimit -Hn)
if ! have_perl; then
	ok "1100 concurrent connections # SKIP no perl"
elif [ "$hard" = unlimited ] || [ "$hard" -ge 4096 ]; then
	check "1100 concurrent connections each get a PONG" 'many_ok 1100'
	check "stats counts them all, none left open" \
		'idle_stats | grep -Eq "^ok connections=0 accepted=1[1-9][0-9]{2} "'
else
	ok "1100 concurrent connections # SKIP hard fd limit $hard"
fi

# ---- control on stdin -------------------------------------------------------
# A fifo held open read-write by us: the proxy's stdin is a pipe that stays
# open, so commands can be sent one at a time and replies read back.
main_pid=$proxy_pid
main_port=$proxy_port
mkfifo "$tmp/stdin.fifo"
exec 6<>"$tmp/stdin.fifo"
start_proxy "$tmp/stdin.out" --target "127.0.0.1:$port2" --control - <"$tmp/stdin.fifo"
stdin_pid=$proxy_pid
# stdin_says COMMAND EXPECTED-PREFIX: the reply line that follows on stdout.
stdin_says() {
	local lines
	lines=$(wc -l <"$tmp/stdin.out")
	printf '%s\n' "$1" >&6
	for _ in $(seq 500); do
		[ "$(wc -l <"$tmp/stdin.out")" -gt "$lines" ] && break
		sleep 0.02
	done
	case $(sed -n "$((lines + 1))p" "$tmp/stdin.out") in
	"$2"*) return 0 ;;
	*) return 1 ;;
	esac
}
check "--control -: PING through the second proxy reaches port $port2" \
	'[ "$(served_port)" = "$port2" ]'
check "--control -: stats replies on stdout" 'stdin_says stats "ok connections="'
check "--control -: a bad command gets an error" 'stdin_says "delay -5" "error: "'
check "--control -: refuse on" 'stdin_says "refuse on" ok'
check "--control -: and it took effect" '! ping_ok'
exec 6>&-
sleep 0.2
check "--control -: EOF on stdin leaves the proxy serving" 'kill -0 "$stdin_pid"'

printf 'refuse on\nstats\n' >"$tmp/stdin.cmds"
start_proxy "$tmp/file.out" --target "127.0.0.1:$port1" --control - <"$tmp/stdin.cmds"
file_pid=$proxy_pid
check "--control - < regular file: commands run at start" \
	'[ "$(sed -n 2p "$tmp/file.out")" = ok ] && ! ping_ok'
proxy_pid=$main_pid
proxy_port=$main_port

# ---- SIGTERM ----------------------------------------------------------------
exec 5<>"/dev/tcp/127.0.0.1/$proxy_port" || setup_failed "connect to the proxy"
for pid in "$file_pid" "$stdin_pid" "$proxy_pid"; do
	kill -TERM "$pid"
	rc=0
	wait "$pid" || rc=$?
	forget "$pid"
	check "SIGTERM: tcpproxy $pid exits 0 (rc $rc)" '[ "$rc" = 0 ]'
done
rc=0
read -r -t 3 -u 5 line 2>/dev/null || rc=$?
check "SIGTERM closed the open client connection (read rc $rc)" \
	'[ "$rc" -ne 0 ] && [ "$rc" -le 128 ]'
exec 5<&-
check "SIGTERM removed the control socket" '[ ! -e "$tmp/ctl" ]'

failures=$(tap_failed)
if [ "$failures" -ne 0 ]; then
	echo "# $failures check(s) failed; tcpproxy log:"
	sed 's/^/#   /' "$tmp/proxy.log"
	exit 1
fi
echo "# all checks passed"
