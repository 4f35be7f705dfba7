#!/bin/bash
# scale.sh - how payhook's cost grows: with the payments table, with the
# body, with the connections. `make bench-scale` (table), `make bench-body`,
# `make bench-conns`; `make bench-scale-all` runs the three. None is part of
# make check. Speed is reported, never judged.
#
#   BUILD_DIR=... SRC_DIR=... bash tests/perf/bench/scale.sh table|body|conns|all|report
#
# The stack of make bench (tests/lib/harness.sh: mariadbd, redis-server, lighttpd
# and spawn-fcgi pools of 8 payhook workers on 127.0.0.1), with MariaDB as the
# doc/database.md recommends it: innodb_flush_log_at_trx_commit = 1,
# innodb_buffer_pool_size = SCALE_BUFFER_POOL (1G), innodb_log_file_size 256M,
# max_allowed_packet 64M (set at run time).
#
# table  fills payments with realistic delivered rows (tests/perf/bench/scale_rows:
#        nine providers' ids, ~1.5 KB payloads, three years of received_at)
#        by LOAD DATA LOCAL INFILE from a pipe, in chunks of 100,000 rows
#        (one transaction each, unique checks on), timing the loader; at each
#        size of SCALE_SIZES ("0 1000000 5000000") runs payhook (ids at random
#        places in the unique key) and raw_limit interleaved at c = 32,
#        SCALE_ROUNDS (3) rounds of SCALE_SECONDS (8) s, with the buffer
#        pool's hit ratio and the pages read from disk per request over
#        the rounds, the table's size (data, each index, the .ibd file) and
#        the unique key's bytes per row.
# body   Shopify-like orders of SCALE_BODY_KBS ("1 16 256 1024") KB through
#        lighttpd to a pool with max_body_bytes 2 MiB, unsigned (standard
#        profile, signature_scheme none) and signed (shopify profile: HMAC
#        of the body), at c = 8: req/s, p99, worker CPU per request and per
#        KB; a cost linear in the body keeps the µs per KB level.
# conns  c = SCALE_CONNS ("8 32 128 512 1024") through lighttpd, nginx, and nginx
#        with fastcgi_keep_conn on (upstream keepalive 8), a pool of 8 each
#        (spawn-fcgi -b SCALE_BACKLOG, 4096), and lighttpd to a pool with
#        SCALE_SMALL_BACKLOG (64): req/s, p99, non-2xx and socket
#        errors, answers that never came; then accept/close system calls
#        per request in the workers (strace -c -f over the pool) for each of
#        the three. ulimit -n is raised to its hard limit for the run;
#        net.core.somaxconn is read and reported, never changed.
# retention
#        payload_retention_days over a simulated year: a year of delivered
#        rows (SCALE_RET_ROWS, 240,000: about 660 a day, received_at spread
#        over the year up to now), then a month more (its twelfth) without
#        retention; then payhook-dispatch with payload_retention_days
#        SCALE_RET_DAYS (30) clears the older payloads while payhook takes
#        deliveries at c = 32, SCALE_ROUNDS rounds in which the dispatcher
#        runs and rounds in which it is stopped (SIGSTOP), interleaved: req/s
#        and p99 with and without a batch running; then another month. At
#        each point the table's size: the clustered index's pages in use and
#        allocated, the unique key, the .ibd file, rows with a payload.
#
# Figures go to $BUILD_DIR/tests/perf/bench/scale-{table,body,conns,retention}.tsv, the
# report (scale.md, and scale-table.png, scale-body.png, scale-conns.png by
# gnuplot) beside them; "report" redoes the report from the TSVs. Exit 1
# when an answer lied (rows differ from the 200s), 99 when the stack cannot
# start, 2 on a usage error.

set -u
part=${1:-}
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
SRC_DIR=${SRC_DIR:-$(dirname "$(dirname "$(dirname "$here")")")}
BUILD_DIR=${BUILD_DIR:-$PWD}
OUT=$BUILD_DIR/tests/perf/bench
BENCH_BIN=$BUILD_DIR/tests/perf/bench
PAYHOOK=$BUILD_DIR/app/payhook
case $part in
table | body | conns | retention | all | report) ;;
*)
	sed -n '2,/^$/s/^# \{0,1\}//p' "$0" >&2
	exit 2 ;;
esac

read -r -a SIZES <<<"${SCALE_SIZES:-0 1000000 5000000}"
read -r -a KBS <<<"${SCALE_BODY_KBS:-1 16 256 1024}"
read -r -a CONNS <<<"${SCALE_CONNS:-8 32 128 512 1024}"
ROUNDS=${SCALE_ROUNDS:-3}
RET_ROWS=${SCALE_RET_ROWS:-240000}
RET_DAYS=${SCALE_RET_DAYS:-30}
SECS=${SCALE_SECONDS:-8}
BUFFER_POOL=${SCALE_BUFFER_POOL:-1G}
BACKLOG=${SCALE_BACKLOG:-4096}
SMALL_BACKLOG=${SCALE_SMALL_BACKLOG:-64}
CHUNK=100000
POOL=8
DRAIN_MS=500
SECRET=shpss_bench_secret_3f9a1c
mkdir -p "$OUT" || exit 99

log() { printf '# scale: %s\n' "$*" >&2; }

# ---- the report ------------------------------------------------------------

# med FILE A B COLUMN: the median of COLUMN over the rows "run A B ...".
med() {
	awk -F'\t' -v a="$2" -v b="$3" -v col="$4" '$1 == "run" && $2 == a && $3 == b { print $col }' "$1" | median
}

report_table() {
	local tsv=$OUT/scale-table.tsv s base rawbase first rps raw pr p99 hit
	[ -s "$tsv" ] || return 0
	echo "### Table size"
	echo
	awk -F'\t' '$1 == "meta" { printf "%s: %s. ", $2, $3 } END { print "" }' "$tsv"
	echo
	echo "| rows | payhook req/s | p99 ms | raw_limit req/s | payhook / raw_limit | payhook / empty | raw_limit / empty | buffer-pool hit | disk reads / request | data MiB | unique key MiB | other indexes MiB | .ibd MiB | unique key B/row | load rows/s |"
	echo "| ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |"
	# The first size measured is the reference (the empty table).
	first=$(awk -F'\t' '$1 == "size" { print $2; exit }' "$tsv")
	base=$(med "$tsv" "$first" ph 5)
	rawbase=$(med "$tsv" "$first" raw 5)
	: >"$OUT/scale-table.dat"
	# shellcheck disable=SC2013 # numbers, one a line
	for s in $(awk -F'\t' '$1 == "size" { print $2 }' "$tsv"); do
		rps=$(med "$tsv" "$s" ph 5)
		p99=$(med "$tsv" "$s" ph 7)
		raw=$(med "$tsv" "$s" raw 5)
		# Per round, against raw_limit measured in the same minutes: the
		# machine's drift from size to size cancels.
		pr=$(awk -F'\t' -v s="$s" '$1 == "run" && $2 == s { v[$3, $4] = $5; r[$4] = 1 }
			END { for (k in r) if (v["raw", k] > 0) print v["ph", k] / v["raw", k] }' "$tsv" | median)
		hit=$(awk -F'\t' -v s="$s" '$1 == "size" && $2 == s { print $3 }' "$tsv")
		awk -F'\t' -v s="$s" -v rps="$rps" -v p99="$p99" -v raw="$raw" -v base="$base" -v rawbase="$rawbase" -v pr="$pr" '
			$1 == "size" && $2 == s {
				mib = 1048576
				printf "| %d | %.0f | %s | %.0f | %.2f | %s | %s | %s | %s | %.0f | %.0f | %.0f | %.0f | %s | %s |\n",
					$2, rps, p99, raw, pr, (base > 0 ? sprintf("%.2f×", rps / base) : "-"),
					(rawbase > 0 ? sprintf("%.2f×", raw / rawbase) : "-"),
					$3, ($10 == "" ? "-" : $10), $4 / mib, $5 / mib, $6 / mib, $7 / mib,
					($8 > 0 ? sprintf("%.0f", $5 / $8) : "-"), $9
			}' "$tsv"
		printf '%s %s %s %s\n' "$s" "$rps" "$p99" "$raw" >>"$OUT/scale-table.dat"
	done
	echo
	echo "payhook / raw_limit: the median of the rounds' ratios (each round measures both in the same minutes)."
	echo
	echo "Medians of $(awk -F'\t' '$1 == "run" { print $4 }' "$tsv" | sort -u | wc -l) rounds; hit = 1 - Innodb_buffer_pool_reads / Innodb_buffer_pool_read_requests over the rounds; sizes from mysql.innodb_index_stats after ANALYZE TABLE; B/row counts the rows at that size."
	echo
}

report_body() {
	local tsv=$OUT/scale-body.tsv kb k rps p99 us
	[ -s "$tsv" ] || return 0
	echo "### Body size"
	echo
	echo "| body KB | unsigned req/s | p99 ms | worker µs/req | µs/KB | MariaDB µs/req | signed req/s | p99 ms | worker µs/req | µs/KB | MariaDB µs/req |"
	echo "| ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |"
	: >"$OUT/scale-body.dat"
	# shellcheck disable=SC2013 # numbers, one a line
	for kb in $(awk -F'\t' '$1 == "run" { print $2 }' "$tsv" | sort -un); do
		printf '| %s |' "$kb"
		printf '%s' "$kb" >>"$OUT/scale-body.dat"
		for k in plain signed; do
			rps=$(med "$tsv" "$kb" "$k" 5)
			p99=$(med "$tsv" "$kb" "$k" 7)
			us=$(med "$tsv" "$kb" "$k" 11)
			printf ' %.0f | %s | %s | %s | %s |' "$rps" "$p99" "$us" \
				"$(awk -v u="$us" -v k="$kb" 'BEGIN { printf "%.1f", u / k }')" \
				"$(med "$tsv" "$kb" "$k" 14)"
			printf ' %s %s' "$us" "$(awk -v u="$us" -v k="$kb" 'BEGIN { printf "%.2f", u / k }')" >>"$OUT/scale-body.dat"
		done
		printf '\n'
		printf '\n' >>"$OUT/scale-body.dat"
	done
	echo
	# The cost each further KB adds, size to size: level when the cost
	# is linear in the body, growing when a step is quadratic.
	awk 'NR > 1 { printf "* %s KB to %s KB: %.1f µs per further KB unsigned, %.1f signed\n", k, $1, ($2 - u) / ($1 - k), ($4 - s) / ($1 - k) }
		{ k = $1; u = $2; s = $4 }' "$OUT/scale-body.dat"
	echo
	awk -F'\t' '$1 == "run" { n += $10; r += $8 } END { printf "%d rows recorded, %d answers other than 2xx.\n\n", r, n }' "$tsv"
	echo "Medians of the rounds at c = 8; worker µs: user + system CPU of the pool's 8 workers per request (/proc), MariaDB µs the same of mariadbd; µs/KB: the worker's over the body size."
	echo
}

report_conns() {
	local tsv=$OUT/scale-conns.tsv c w rps p99
	[ -s "$tsv" ] || return 0
	echo "### Connections"
	echo
	echo "| c | lighttpd req/s | p99 ms | errors | nginx req/s | p99 ms | errors | nginx keep_conn req/s | p99 ms | errors | lighttpd, backlog $(awk -F'\t' '$1 == "meta" && $2 == "short backlog" { print $3 }' "$tsv"), req/s | p99 ms | errors |"
	echo "| ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |"
	: >"$OUT/scale-conns.dat"
	# shellcheck disable=SC2013 # numbers, one a line
	for c in $(awk -F'\t' '$1 == "run" { print $2 }' "$tsv" | sort -un); do
		printf '| %s |' "$c"
		printf '%s' "$c" >>"$OUT/scale-conns.dat"
		for w in lighttpd nginx keep small; do
			rps=$(med "$tsv" "$c" "$w" 5)
			p99=$(med "$tsv" "$c" "$w" 7)
			printf ' %.0f | %s | %s |' "$rps" "$p99" \
				"$(awk -F'\t' -v c="$c" -v w="$w" '$1 == "run" && $2 == c && $3 == w { n += $8; e += $9; u += $13 } END { printf "%d non-2xx, %d socket%s", n, e, (u > 0 ? sprintf(", %d unanswered", u) : "") }' "$tsv")"
			printf ' %s %s' "$rps" "$p99" >>"$OUT/scale-conns.dat"
		done
		printf '\n'
		printf '\n' >>"$OUT/scale-conns.dat"
	done
	echo
	awk -F'\t' '$1 == "syscalls" { printf "* %s: %s requests, accept %.2f, close %.2f, shutdown %.2f per request\n", $2, $3, $4 / $3, $5 / $3, $6 / $3 }' "$tsv"
	awk -F'\t' '$1 == "meta" && $2 != "short backlog" { printf "* %s: %s\n", $2, $3 }' "$tsv"
	echo
}

plot() {
	local name=$1 title=$2 xlabel=$3 ylabel=$4 logx=$5 plots=$6
	command -v gnuplot >/dev/null 2>&1 || return 0
	[ -s "$OUT/$name.dat" ] || return 0
	gnuplot <<-EOF || log "gnuplot failed for $name"
	set terminal pngcairo size 900,600 noenhanced
	set output "$OUT/$name.png"
	set title "$title"
	set xlabel "$xlabel"
	set ylabel "$ylabel"
	set y2label "p99 ms"
	set y2tics
	set ytics nomirror
	set grid
	set key outside bottom center horizontal
	$logx
	plot $plots
	EOF
}

report_retention() {
	local tsv=$OUT/scale-retention.tsv stopped clearing
	[ -s "$tsv" ] || return 0
	echo "### Retention"
	echo
	awk -F'\t' '$1 == "meta" { printf "%s: %s. ", $2, $3 } END { print "" }' "$tsv"
	echo
	echo "| point | rows | rows with a payload | clustered index in use MiB | clustered index allocated MiB | unique key MiB | .ibd MiB | data_free MiB |"
	echo "| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: |"
	awk -F'\t' '$1 == "size" { split($3, a, " "); split($6, r, " "); printf "| %s | %d | %d | %.1f | %.1f | %.1f | %.1f | %.1f |\n", $2, r[1], r[2], a[1] / 1048576, a[2] / 1048576, a[3] / 1048576, $4 / 1048576, $5 / 1048576 }' "$tsv"
	# For the plot: point number, in use, allocated, .ibd (MiB), label.
	awk -F'\t' '$1 == "size" { n++; split($3, a, " "); printf "%d %.1f %.1f %.1f \"%s\"\n", n, a[1] / 1048576, a[2] / 1048576, $4 / 1048576, $2 }' "$tsv" >"$OUT/scale-retention.dat"
	echo
	clearing=$(awk -F'\t' '$1 == "run" && $2 == "clearing" { print $4 }' "$tsv" | median)
	stopped=$(awk -F'\t' '$1 == "run" && $2 == "stopped" { print $4 }' "$tsv" | median)
	echo "| payhook at c = 32 | req/s (min-max) | p99 ms (min-max) |"
	echo "| --- | ---: | ---: |"
	for m in stopped clearing; do
		printf '| %s | %s (%s) | %s (%s) |\n' 			"$([ $m = stopped ] && echo "dispatcher stopped" || echo "dispatcher clearing payloads")" 			"$(awk -F'\t' -v m=$m '$1 == "run" && $2 == m { print $4 }' "$tsv" | median)" 			"$(awk -F'\t' -v m=$m '$1 == "run" && $2 == m { print $4 }' "$tsv" | sort -n | sed -n '1p;$p' | paste -sd-)" 			"$(awk -F'\t' -v m=$m '$1 == "run" && $2 == m { print $6 }' "$tsv" | median)" 			"$(awk -F'\t' -v m=$m '$1 == "run" && $2 == m { print $6 }' "$tsv" | sort -n | sed -n '1p;$p' | paste -sd-)"
	done
	echo
	echo "clearing / stopped, req/s: $(awk -v a="$clearing" -v b="$stopped" 'BEGIN { if (b > 0) printf "%.2f", a / b; else print "-" }')"
	echo
}

report() {
	{
		echo "## How cost grows ($(date -u '+%Y-%m-%d %H:%M UTC'))"
		echo
		report_table
		report_body
		report_conns
		report_retention
	} >"$OUT/scale.md"
	plot scale-table "throughput and p99 against table size (c = 32)" "rows in payments" "req/s" "set yrange [0:*]; set y2range [0:*]" \
		"'$OUT/scale-table.dat' using 1:2 with linespoints lw 2 title 'payhook req/s', '' using 1:4 with linespoints lw 2 title 'raw_limit req/s', '' using 1:3 axes x1y2 with linespoints dt 2 lw 2 title 'payhook p99 ms'"
	plot scale-body "worker CPU per KB of body (c = 8)" "body KB (log)" "worker µs per KB" "set logscale x 2; set logscale y; unset y2tics; unset y2label" \
		"'$OUT/scale-body.dat' using 1:3 with linespoints lw 2 title 'unsigned µs/KB', '' using 1:5 with linespoints lw 2 title 'signed µs/KB'"
	plot scale-conns "throughput and p99 against connections" "wrk connections (log)" "req/s" "set logscale x 2; set logscale y2; set yrange [0:*]" \
		"'$OUT/scale-conns.dat' using 1:2 with linespoints lw 2 title 'lighttpd req/s', '' using 1:4 with linespoints lw 2 title 'nginx req/s', '' using 1:6 with linespoints lw 2 title 'nginx keep_conn req/s', '' using 1:3 axes x1y2 with linespoints dt 2 lw 2 title 'lighttpd p99', '' using 1:5 axes x1y2 with linespoints dt 2 lw 2 title 'nginx p99', '' using 1:7 axes x1y2 with linespoints dt 2 lw 2 title 'nginx keep_conn p99', '' using 1:8 with linespoints lw 2 title 'lighttpd, short backlog, req/s', '' using 1:9 axes x1y2 with linespoints dt 2 lw 2 title 'lighttpd, short backlog, p99'"
	plot scale-retention "payments over a simulated year, payload_retention_days = 30" "" "MiB" "unset y2tics; unset y2label; set yrange [0:*]; set xtics rotate by -15; set offsets 0.3, 0.3, 0, 0" \
		"'$OUT/scale-retention.dat' using 1:4:xtic(5) with linespoints lw 2 title '.ibd file', '' using 1:3 with linespoints lw 2 title 'clustered index allocated', '' using 1:2 with linespoints lw 2 title 'clustered index in use'"
	rm -f "$OUT"/scale-*.dat
	cat "$OUT/scale.md"
}

# shellcheck source-path=SCRIPTDIR source=lib.sh
. "$here/lib.sh"

if [ "$part" = report ]; then
	report
	exit 0
fi

for tool in wrk lighttpd spawn-fcgi redis-server mariadbd mariadb; do
	command -v "$tool" >/dev/null 2>&1 || { log "$tool is not installed"; exit 99; }
done
for prog in "$PAYHOOK" "$BENCH_BIN/raw_limit" "$BENCH_BIN/scale_rows" "$BUILD_DIR/tools/freeport"; do
	[ -x "$prog" ] || { log "$prog is not built (make bench-scale builds it)"; exit 99; }
done

# 1024 connections of wrk, as many of lighttpd or nginx and their sockets
# to the pool: raise the soft limit to the hard one for this run.
ulimit -n "$(ulimit -Hn)" 2>/dev/null || true

bench_start >&2 || exit 99
W=$HARNESS_DIR/scale
mkdir -p "$W" || exit 99
FAILED=0
fail_check() {
	FAILED=$((FAILED + 1))
	log "CHECK FAILED: $*"
	printf '%s\n' "$*" >>"$W/failures"
}

# The recommended settings (doc/database.md, "MariaDB settings and sizing"), at run time.
harness_sql "SET GLOBAL innodb_flush_log_at_trx_commit = 1;
	SET GLOBAL innodb_buffer_pool_size = $(numfmt --from=iec "$BUFFER_POOL");
	SET GLOBAL innodb_log_file_size = 268435456;
	SET GLOBAL max_allowed_packet = 67108864" || exit 99
for _ in $(seq 1 300); do
	case $(harness_sql "SHOW STATUS LIKE 'Innodb_buffer_pool_resize_status'" | cut -f2) in
	*Completed* | "") break ;;
	esac
	sleep 0.1
done
DB_SETTINGS=$(harness_sql "SELECT CONCAT('MariaDB ', VERSION(), ', innodb_flush_log_at_trx_commit=', @@innodb_flush_log_at_trx_commit, ', buffer pool ', @@innodb_buffer_pool_size DIV 1048576, 'M, redo log ', @@innodb_log_file_size DIV 1048576, 'M, max_allowed_packet ', @@max_allowed_packet DIV 1048576, 'M')")
# The disk under the datadir: its size, and whether it spins.
disk=$(df --output=source "$HARNESS_DIR" | tail -n 1)
disk=${disk##*/}
[ -e "/sys/block/$disk" ] || disk=${disk%%[0-9]*}
case $(cat "/sys/block/$disk/queue/rotational" 2>/dev/null) in
0) disk="$disk, $(df -h --output=size "$HARNESS_DIR" | tail -n 1 | tr -d ' '), not rotational" ;;
1) disk="$disk, $(df -h --output=size "$HARNESS_DIR" | tail -n 1 | tr -d ' '), rotational" ;;
esac
MACHINE="$(nproc) cores ($(sed -n 's/^model name[[:space:]]*: //p' /proc/cpuinfo | head -n 1)), $(awk '/MemTotal/ { printf "%.0f GiB", $2 / 1048576 }' /proc/meminfo) memory, disk $disk, kernel $(uname -r)"
log "$DB_SETTINGS; $MACHINE"

# Every pool: the harness's backend settings, db_only, log_level warn.
export PAYHOOK_REDIS_UNAVAILABLE=db_only PAYHOOK_LOG_LEVEL=warn

# pool NAME [SPAWN-FCGI OPTIONS] -- [NAME=VALUE...]: spawn-fcgi -F 8 payhook
# on $W/NAME.sock with these settings; sets POOL_PIDS.
pool() {
	local name=$1
	local -a opts=()
	shift
	while [ "$#" -gt 0 ] && [ "$1" != -- ]; do opts+=("$1"); shift; done
	shift
	POOL_PIDS=()
	(
		[ "$#" = 0 ] || export "${@?}"
		harness_spawn_pool "$name" "$POOL" "$W/$name.sock" "${opts[@]}" -- "$PAYHOOK"
	) || return 1
	harness_record_pool "$name" "$POOL" || return 1
	POOL_PIDS=("${HARNESS_POOL_PIDS[@]}")
}

max_id() {
	harness_sql "SELECT COALESCE(MAX(id), 0) FROM payments"
}

# wrk_run KIND C URL SCRIPT TAG [ARGS]: one wrk run of SECS seconds against
# URL with the workers in CPU_PIDS... (cpu_begin done by the caller); sets
# LINE (wrk's result line), ROWS (the run's rows: by tag for new_id.lua's
# ids, else those inserted meanwhile) and CHECK, and checks that every 200
# has its row.
wrk_run() {
	local kind=$1 c=$2 url=$3 script=$4 tag=$5 before stop s200 s5xx
	shift 5
	before=$(max_id)
	stop=$(($(harness_now_ms) + SECS * 1000 - DRAIN_MS))
	timeout $((SECS + 60)) wrk -t2 -c"$c" -d"${SECS}s" --latency --timeout 10s \
		-s "$here/$script" "$url" -- "$tag" "$stop" "$@" >"$W/$kind-$tag.wrk" 2>&1
	LINE=$(grep '^wrk tag=' "$W/$kind-$tag.wrk")
	cpu_end "$(kv "$LINE" requests)"
	if [ "$script" = new_id.lua ] && [ "${1:-}" != random ]; then
		# By tag: a request a kept FastCGI connection held back may be
		# recorded during a later run.
		ROWS=$(harness_sql "SELECT COUNT(*) FROM payments WHERE provider = 'standard' AND transaction_id LIKE '$tag-%'")
	else
		ROWS=$(harness_sql "SELECT COUNT(*) FROM payments WHERE id > $before")
	fi
	s200=$(status_count "$(kv "$LINE" statuses)" '2??')
	s5xx=$(status_count "$(kv "$LINE" statuses)" '5??')
	CHECK=ok
	if [ -z "$LINE" ]; then
		tail -n 5 "$W/$kind-$tag.wrk" >&2
		CHECK=FAIL
		fail_check "$kind $tag: wrk printed no result line"
	elif [ "$ROWS" -lt "$s200" ] ||
		[ "$ROWS" -gt $((s200 + $(kv "$LINE" unanswered) + s5xx)) ]; then
		CHECK=FAIL
		fail_check "$kind $tag: $ROWS rows for $s200 answers 200 ($(kv "$LINE" statuses))"
	fi
	log "$kind $tag c=$c: rps=$(kv "$LINE" rps) p99=$(kv "$LINE" p99_ms) statuses=$(kv "$LINE" statuses) errors=$(kv "$LINE" errors) rows=$ROWS $CHECK"
}

# socket_errors ERRORS: connect+read+write+timeout from "c/r/w/t".
socket_errors() {
	local IFS=/
	local -a e
	read -r -a e <<<"$1"
	printf '%s\n' $((${e[0]:-0} + ${e[1]:-0} + ${e[2]:-0} + ${e[3]:-0}))
}

# ---- table size ------------------------------------------------------------

pool_status() {
	harness_sql "SHOW GLOBAL STATUS WHERE Variable_name IN ('Innodb_buffer_pool_read_requests', 'Innodb_buffer_pool_reads')" |
		awk '{ v[$1] = $2 } END { print v["Innodb_buffer_pool_read_requests"], v["Innodb_buffer_pool_reads"] }'
}

# fill N: LOAD DATA of rows until payments holds N generated rows; prints
# the loader's rows per second.
LOADED=0
fill() {
	local target=$1 total=${SIZES[-1]} n t0 gen fifo=$W/rows.fifo
	[ "$target" -gt "$LOADED" ] || { echo -; return 0; }
	t0=$(harness_now_ms)
	rm -f "$fifo"
	mkfifo "$fifo" || return 1
	while [ "$LOADED" -lt "$target" ]; do
		n=$((target - LOADED < CHUNK ? target - LOADED : CHUNK))
		"$BENCH_BIN/scale_rows" --first "$LOADED" --count "$n" --total "$total" \
			--years "${FILL_YEARS:-3}" >"$fifo" &
		gen=$!
		# (wait for the generator alone: the servers may be children too)
		harness_sql "LOAD DATA LOCAL INFILE '$fifo' INTO TABLE payments
			(provider, transaction_id, event_id, amount, currency, payload,
			 received_at, dispatch_state, dispatch_due_at, dispatch_attempts,
			 dispatch_token, dispatch_owner, dispatch_last_error, delivered_at)" ||
			{ wait "$gen"; return 1; }
		wait "$gen"
		LOADED=$((LOADED + n))
	done
	rm -f "$fifo"
	awk -v n="$((target - ${2:-0}))" -v ms="$(($(harness_now_ms) - t0))" 'BEGIN { printf "%.0f\n", n * 1000 / (ms > 0 ? ms : 1) }'
}

run_table() {
	local tsv=$OUT/scale-table.tsv s round step rate prev=0 st0 st1 hit reads sizes rows
	: >"$tsv"
	printf 'meta\tmachine\t%s\nmeta\tdatabase\t%s\nmeta\tload\tpayhook and raw_limit at c = 32, pools of %s, %s rounds of %s s\n' \
		"$MACHINE" "$DB_SETTINGS" "$POOL" "$ROUNDS" "$SECS" >>"$tsv"
	pool tab -- PAYHOOK_SIGNATURE_SCHEME=none || return 1
	local -a PIDS=("${POOL_PIDS[@]}")
	printf 'server.max-keep-alive-requests = 1000000\nserver.modules += ( "mod_fastcgi" )\nfastcgi.server += ( "/webhook" => (( "socket" => "%s", "check-local" => "disable" )) )\n' \
		"$W/tab.sock" >"$W/lighttpd-table.conf"
	harness_start_lighttpd lighttpd-table "$W/lighttpd-table.conf" >&2 || return 1
	local url=http://127.0.0.1:$LIGHTTPD_PORT/webhook
	harness_wait_http "$url" 405 10 "$LIGHTTPD_PID" || return 1
	for s in "${SIZES[@]}"; do
		log "table: filling to $s rows"
		rate=$(fill "$s" "$prev") || { fail_check "loading $s rows failed"; return 1; }
		prev=$s
		log "table: $s rows loaded ($rate rows/s)"
		# Warm-up, not recorded.
		cpu_begin "${PIDS[@]}"
		SECS=2 wrk_run warm 32 "$url" new_id.lua "w$s" random
		st0=$(pool_status)
		for round in $(seq 1 "$ROUNDS"); do
			for step in $([ $((round % 2)) = 1 ] && echo ph raw || echo raw ph); do
				if [ "$step" = ph ]; then
					cpu_begin "${PIDS[@]}"
					wrk_run ph 32 "$url" new_id.lua "s$s-r$round" random
					printf 'run\t%s\tph\t%s\t%s\t%s\t%s\t%s\t%s\n' "$s" "$round" \
						"$(kv "$LINE" rps)" "$(kv "$LINE" p50_ms)" "$(kv "$LINE" p99_ms)" \
						"$ROWS" "$CHECK" >>"$tsv"
				else
					measure_raw "$s" "$round" >>"$tsv"
				fi
			done
		done
		st1=$(pool_status)
		hit=$(awk -v a="$st0" -v b="$st1" 'BEGIN { split(a, x, " "); split(b, y, " "); r = y[1] - x[1]; m = y[2] - x[2]; if (r > 0) printf "%.5f", 1 - m / r; else print "-" }')
		# Pages read from disk per request of the rounds (payhook's and
		# raw_limit's rows together).
		reads=$(awk -v a="$st0" -v b="$st1" -v n="$(awk -F'\t' -v s="$s" '$1 == "run" && $2 == s { n += $8 } END { print n + 0 }' "$tsv")" \
			'BEGIN { split(a, x, " "); split(b, y, " "); if (n > 0) printf "%.3f", (y[2] - x[2]) / n; else print "-" }')
		harness_sql "ANALYZE TABLE payments" >/dev/null
		sizes=$(harness_sql "SELECT
			(SELECT stat_value * @@innodb_page_size FROM mysql.innodb_index_stats WHERE database_name = 'payhook' AND table_name = 'payments' AND index_name = 'PRIMARY' AND stat_name = 'size'),
			(SELECT stat_value * @@innodb_page_size FROM mysql.innodb_index_stats WHERE database_name = 'payhook' AND table_name = 'payments' AND index_name = 'uq_payments_provider_transaction_id' AND stat_name = 'size'),
			(SELECT SUM(stat_value) * @@innodb_page_size FROM mysql.innodb_index_stats WHERE database_name = 'payhook' AND table_name = 'payments' AND index_name NOT IN ('PRIMARY', 'uq_payments_provider_transaction_id') AND stat_name = 'size')")
		rows=$(harness_sql "SELECT COUNT(*) FROM payments")
		# size SIZE HIT DATA UNIQUE OTHER IBD ROWS LOAD-RATE READS/REQUEST
		printf 'size\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n' "$s" "$hit" \
			"$(cut -f1 <<<"$sizes")" "$(cut -f2 <<<"$sizes")" "$(cut -f3 <<<"$sizes")" \
			"$(stat -c %s "$(harness_sql 'SELECT @@datadir')/payhook/payments.ibd")" \
			"$rows" "$rate" "$reads" >>"$tsv"
		log "table: $s rows: hit $hit, sizes $sizes"
	done
	harness_stop lighttpd-table
}

# measure_raw SIZE ROUND: raw_limit as bench.sh runs it; prints its row.
measure_raw() {
	local line before rows check=ok tag=raw$1r$2
	before=$(max_id)
	line=$(timeout $((SECS + 60)) "$BENCH_BIN/raw_limit" --procs "$POOL" \
		--clients 32 --queue shared --id-prefix "$tag" \
		--seconds "$(awk -v s="$SECS" -v d="$DRAIN_MS" 'BEGIN { print s - d / 1000 }')" \
		--window-ms $((SECS * 1000)) 2>"$W/$tag.err")
	rows=$(harness_sql "SELECT COUNT(*) FROM payments WHERE id > $before")
	if [ -z "$line" ] || [ "$(kv "$line" errors)" != 0 ] || [ "$rows" != "$(kv "$line" ok)" ]; then
		check=FAIL
		fail_check "$tag: raw_limit '${line:-no output}' with $rows rows; $(head -c 300 "$W/$tag.err")"
	fi
	log "raw $tag: rps=$(kv "$line" rps) p99=$(kv "$line" p99_ms) rows=$rows $check"
	printf 'run\t%s\traw\t%s\t%s\t%s\t%s\t%s\t%s\n' "$1" "$2" "$(kv "$line" rps)" \
		"$(kv "$line" p50_ms)" "$(kv "$line" p99_ms)" "$rows" "$check"
}

# ---- body size -------------------------------------------------------------

run_body() {
	local tsv=$OUT/scale-body.tsv kb round k n=0
	: >"$tsv"
	pool plain -- PAYHOOK_SIGNATURE_SCHEME=none PAYHOOK_MAX_BODY_BYTES=2097152 || return 1
	local -a PLAIN=("${POOL_PIDS[@]}")
	pool shop -- PAYHOOK_PROVIDERS=shopify PAYHOOK_SHOPIFY_SECRET=$SECRET \
		PAYHOOK_MAX_BODY_BYTES=2097152 || return 1
	local -a SHOP=("${POOL_PIDS[@]}")
	printf 'server.max-keep-alive-requests = 1000000\nserver.max-request-size = 4096\nserver.modules += ( "mod_fastcgi" )\nfastcgi.server += (\n "/plain" => (( "socket" => "%s", "check-local" => "disable" )),\n "/shop/" => (( "socket" => "%s", "check-local" => "disable" )),\n)\n' \
		"$W/plain.sock" "$W/shop.sock" >"$W/lighttpd-body.conf"
	harness_start_lighttpd lighttpd-body "$W/lighttpd-body.conf" >&2 || return 1
	local base=http://127.0.0.1:$LIGHTTPD_PORT
	harness_wait_http "$base/plain" 405 10 "$LIGHTTPD_PID" || return 1
	for round in $(seq 1 "$ROUNDS"); do
		for kb in "${KBS[@]}"; do
			for k in $([ $((round % 2)) = 1 ] && echo plain signed || echo signed plain); do
				n=$((n + 1))
				if [ "$k" = plain ]; then
					cpu_begin "${PLAIN[@]}"
					wrk_run body 8 "$base/plain" body.lua "$n" "$kb"
				else
					cpu_begin "${SHOP[@]}"
					wrk_run body 8 "$base/shop/shopify" body.lua "$n" "$kb" "$SECRET"
				fi
				# run KB KIND ROUND RPS P50 P99 ROWS CHECK NON2XX
				#     WORKER-US USER-US LIGHTTPD-US MARIADB-US CLIENT-US
				printf 'run\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n' "$kb" "$k" \
					"$round" "$(kv "$LINE" rps)" "$(kv "$LINE" p50_ms)" \
					"$(kv "$LINE" p99_ms)" "$ROWS" "$CHECK" "$(kv "$LINE" non2xx)" \
					"${CPU_US[0]}" "${CPU_US[1]}" "${CPU_US[2]}" "${CPU_US[4]}" \
					"${CPU_US[8]}" >>"$tsv"
			done
		done
	done
	harness_stop lighttpd-body
}

# ---- connections -----------------------------------------------------------

# start_nginx: nginx in the foreground on a free port with /nokeep (a new
# FastCGI connection per request, as conf/nginx.conf) and /keep
# (fastcgi_keep_conn on, upstream keepalive 8), each to a pool of its own;
# sets NGINX_PORT and NGINX_PID.
start_nginx() {
	local prefix=$W/nginx
	mkdir -p "$prefix/temp" || return 1
	NGINX_PORT=$("$BUILD_DIR/tools/freeport") || return 1
	{
		[ "$(id -u)" = 0 ] && echo 'user root;'
		cat <<-CONF
		worker_processes 1;
		worker_rlimit_nofile 20000;
		pid $prefix/nginx.pid;
		error_log $prefix/error.log warn;
		events { worker_connections 8192; }
		http {
			access_log off;
			client_body_temp_path $prefix/temp/body;
			fastcgi_temp_path $prefix/temp/fastcgi;
			proxy_temp_path $prefix/temp/proxy;
			scgi_temp_path $prefix/temp/scgi;
			uwsgi_temp_path $prefix/temp/uwsgi;
			keepalive_requests 1000000;
			upstream kept { server unix:$W/ngk.sock; keepalive 8; }
			server {
				listen 127.0.0.1:$NGINX_PORT backlog=$BACKLOG;
				location /nokeep {
					fastcgi_pass unix:$W/ng.sock;
					fastcgi_param REQUEST_URI \$request_uri;
					fastcgi_param REQUEST_METHOD \$request_method;
					fastcgi_param CONTENT_TYPE \$content_type;
					fastcgi_param CONTENT_LENGTH \$content_length;
				}
				location /keep {
					fastcgi_pass kept;
					fastcgi_keep_conn on;
					fastcgi_param REQUEST_URI \$request_uri;
					fastcgi_param REQUEST_METHOD \$request_method;
					fastcgi_param CONTENT_TYPE \$content_type;
					fastcgi_param CONTENT_LENGTH \$content_length;
				}
			}
		}
		CONF
	} >"$prefix/nginx.conf"
	nginx -p "$prefix/" -e "$prefix/error.log" -c "$prefix/nginx.conf" \
		-g 'daemon off;' </dev/null >>"$prefix/nginx.out" 2>&1 &
	NGINX_PID=$!
	harness_record nginx "$NGINX_PID"
	harness_wait_http "http://127.0.0.1:$NGINX_PORT/nokeep" 405 10 "$NGINX_PID" || {
		harness_log_tail "$prefix/error.log"
		return 1
	}
	local -a kids=()
	read -r -a kids 2>/dev/null <"/proc/$NGINX_PID/task/$NGINX_PID/children"
	NGINX_WORKER=${kids[0]:-}
	[ -n "$NGINX_WORKER" ] && harness_record nginx-worker "$NGINX_WORKER"
}

# syscalls NAME URL PID...: strace -c -f on the pool's workers over one wrk
# run at c = 8; prints "syscalls NAME REQUESTS ACCEPTS CLOSES SHUTDOWNS".
syscalls() {
	local name=$1 url=$2 spid out=$W/strace-$1.txt before rows p
	shift 2
	local -a ps=()
	for p in "$@"; do ps+=(-p "$p"); done
	strace -c -f -e trace=accept,accept4,close,shutdown -o "$out" "${ps[@]}" 2>/dev/null &
	spid=$!
	harness_record "strace-$name" "$spid"
	sleep 1
	before=$(max_id)
	SECS=3 wrk_run strace 8 "$url" new_id.lua "st-$name" >/dev/null
	# What the workers served meanwhile, held-back requests included.
	rows=$(harness_sql "SELECT COUNT(*) FROM payments WHERE id > $before")
	kill -INT "$spid" 2>/dev/null
	wait "$spid" 2>/dev/null
	awk -v n="$name" -v r="$rows" '
		$NF == "accept" || $NF == "accept4" { a += $4 }
		$NF == "close" { c = $4 } $NF == "shutdown" { s = $4 }
		END { printf "syscalls\t%s\t%d\t%d\t%d\t%d\n", n, r, a, c, s }' "$out"
}

run_conns() {
	local tsv=$OUT/scale-conns.tsv c round w url n=0
	: >"$tsv"
	pool lt -b "$BACKLOG" -- PAYHOOK_SIGNATURE_SCHEME=none || return 1
	local -a LT=("${POOL_PIDS[@]}")
	pool ng -b "$BACKLOG" -- PAYHOOK_SIGNATURE_SCHEME=none || return 1
	local -a NG=("${POOL_PIDS[@]}")
	pool ngk -b "$BACKLOG" -- PAYHOOK_SIGNATURE_SCHEME=none || return 1
	local -a NGK=("${POOL_PIDS[@]}")
	# The same behind lighttpd with a short backlog: what happens when
	# more FastCGI connections wait than the backlog holds.
	pool lts -b "$SMALL_BACKLOG" -- PAYHOOK_SIGNATURE_SCHEME=none || return 1
	local -a LTS=("${POOL_PIDS[@]}")
	printf 'server.max-keep-alive-requests = 1000000\nserver.max-connections = 4096\nserver.max-fds = 16384\nserver.listen-backlog = %s\nserver.modules += ( "mod_fastcgi" )\nfastcgi.server += (\n "/webhook" => (( "socket" => "%s", "check-local" => "disable" )),\n "/small" => (( "socket" => "%s", "check-local" => "disable" )),\n)\n' \
		"$BACKLOG" "$W/lt.sock" "$W/lts.sock" >"$W/lighttpd-conns.conf"
	harness_start_lighttpd lighttpd-conns "$W/lighttpd-conns.conf" >&2 || return 1
	local lt_pid=$LIGHTTPD_PID lt_url=http://127.0.0.1:$LIGHTTPD_PORT/webhook
	harness_wait_http "$lt_url" 405 10 "$lt_pid" || return 1
	start_nginx || return 1
	{
		printf 'meta\tlisten backlog\tspawn-fcgi -b %s (-b %s for the short-backlog pool), lighttpd and nginx %s; net.core.somaxconn %s (not changed); ulimit -n %s\n' \
			"$BACKLOG" "$SMALL_BACKLOG" "$BACKLOG" "$(cat /proc/sys/net/core/somaxconn)" "$(ulimit -n)"
		printf 'meta\tshort backlog\t%s\n' "$SMALL_BACKLOG"
		printf 'meta\tmachine\t%s\nmeta\tdatabase\t%s\n' "$MACHINE" "$DB_SETTINGS"
	} >>"$tsv"
	for round in $(seq 1 "$ROUNDS"); do
		for c in "${CONNS[@]}"; do
			for w in $([ $((round % 2)) = 1 ] && echo lighttpd nginx keep small || echo small keep nginx lighttpd); do
				n=$((n + 1))
				case $w in
				lighttpd) WEB_PID=$lt_pid; url=$lt_url; cpu_begin "${LT[@]}" ;;
				nginx) WEB_PID=$NGINX_WORKER; url=http://127.0.0.1:$NGINX_PORT/nokeep; cpu_begin "${NG[@]}" ;;
				keep) WEB_PID=$NGINX_WORKER; url=http://127.0.0.1:$NGINX_PORT/keep; cpu_begin "${NGK[@]}" ;;
				small) WEB_PID=$lt_pid; url=http://127.0.0.1:$LIGHTTPD_PORT/small; cpu_begin "${LTS[@]}" ;;
				esac
				wrk_run conns "$c" "$url" new_id.lua "c$n"
				# run C SERVER ROUND RPS P50 P99 NON2XX SOCKET-ERRORS ROWS
				#     CHECK WORKER-US UNANSWERED
				printf 'run\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n' "$c" "$w" \
					"$round" "$(kv "$LINE" rps)" "$(kv "$LINE" p50_ms)" \
					"$(kv "$LINE" p99_ms)" "$(kv "$LINE" non2xx)" \
					"$(socket_errors "$(kv "$LINE" errors)")" "$ROWS" "$CHECK" \
					"${CPU_US[0]}" "$(kv "$LINE" unanswered)" >>"$tsv"
			done
		done
	done
	if command -v strace >/dev/null 2>&1; then
		{
			syscalls lighttpd "$lt_url" "${LT[@]}"
			syscalls nginx "http://127.0.0.1:$NGINX_PORT/nokeep" "${NG[@]}"
			syscalls keep "http://127.0.0.1:$NGINX_PORT/keep" "${NGK[@]}"
		} >>"$tsv"
	else
		log "strace is not installed: no system call counts"
	fi
	unset WEB_PID
}

# ---- retention -------------------------------------------------------------

# retention_sizes LABEL: one "size" row of the retention TSV: LABEL, the
# clustered index's leaf pages in use and its allocated pages (bytes), the
# unique key's (bytes), the .ibd file, InnoDB's data_free, rows, rows with
# a payload.
retention_sizes() {
	harness_sql "ANALYZE TABLE payments" >/dev/null
	printf 'size\t%s\t%s\t%s\t%s\t%s\n' "$1" "$(harness_sql "SELECT
		(SELECT stat_value * @@innodb_page_size FROM mysql.innodb_index_stats WHERE database_name = 'payhook' AND table_name = 'payments' AND index_name = 'PRIMARY' AND stat_name = 'n_leaf_pages'),
		(SELECT stat_value * @@innodb_page_size FROM mysql.innodb_index_stats WHERE database_name = 'payhook' AND table_name = 'payments' AND index_name = 'PRIMARY' AND stat_name = 'size'),
		(SELECT stat_value * @@innodb_page_size FROM mysql.innodb_index_stats WHERE database_name = 'payhook' AND table_name = 'payments' AND index_name = 'uq_payments_provider_transaction_id' AND stat_name = 'size')" | tr '\t' ' ')" \
		"$(stat -c %s "$(harness_sql 'SELECT @@datadir')/payhook/payments.ibd")" \
		"$(harness_sql "SELECT DATA_FREE FROM information_schema.TABLES WHERE TABLE_SCHEMA = 'payhook' AND TABLE_NAME = 'payments'")" \
		"$(harness_sql "SELECT COUNT(*), SUM(LENGTH(payload) > 0) FROM payments" | tr '\t' ' ')"
}

run_retention() {
	local tsv=$OUT/scale-retention.tsv year=$RET_ROWS month=$((RET_ROWS / 12))
	local d_pid round mode t0 left c0 c1 rate
	: >"$tsv"
	printf 'meta\tmachine\t%s\nmeta\tdatabase\t%s\nmeta\tload\t%s rows over one year, months of %s rows; payload_retention_days %s; payhook at c = 32, pools of %s, %s rounds of %s s with the dispatcher running and stopped\n' \
		"$MACHINE" "$DB_SETTINGS" "$year" "$month" "$RET_DAYS" "$POOL" "$ROUNDS" "$SECS" >>"$tsv"
	pool ret -- PAYHOOK_SIGNATURE_SCHEME=none || return 1
	local -a PIDS=("${POOL_PIDS[@]}")
	printf 'server.max-keep-alive-requests = 1000000\nserver.modules += ( "mod_fastcgi" )\nfastcgi.server += ( "/webhook" => (( "socket" => "%s", "check-local" => "disable" )) )\n' \
		"$W/ret.sock" >"$W/lighttpd-retention.conf"
	harness_start_lighttpd lighttpd-retention "$W/lighttpd-retention.conf" >&2 || return 1
	local url=http://127.0.0.1:$LIGHTTPD_PORT/webhook
	harness_wait_http "$url" 405 10 "$LIGHTTPD_PID" || return 1

	# One year of rows, spread up to now, then a month more (the loader's
	# ids and times are laid out for the whole, as if received in turn).
	SIZES=("$((year + 2 * month))") FILL_YEARS=1
	log "retention: loading a year ($year rows)"
	rate=$(fill "$year" 0) || { fail_check "loading $year rows failed"; return 1; }
	retention_sizes year >>"$tsv"
	fill "$((year + month))" "$year" >/dev/null || { fail_check "loading a month failed"; return 1; }
	retention_sizes "a month more, no retention" >>"$tsv"

	# The dispatcher clears, and delivers nothing: delivery is paused
	# (--pause; the clearing goes on while paused), so the payments of the
	# rounds stay pending and the rounds measure the clearing alone.
	(
		export PAYHOOK_PAYLOAD_RETENTION_DAYS=$RET_DAYS PAYHOOK_DISPATCH_COMMAND='exit 0'
		export PAYHOOK_LOG_LEVEL=info
		unset PAYHOOK_CONFIG PAYHOOK_DISPATCH_URL
		"$BUILD_DIR/app/payhook-dispatch" --pause >>"$W/retention-dispatch.log" 2>&1 &&
			exec "$BUILD_DIR/app/payhook-dispatch" >>"$W/retention-dispatch.log" 2>&1
	) &
	d_pid=$!
	harness_record retention-dispatch "$d_pid"
	cpu_begin "${PIDS[@]}"
	SECS=2 wrk_run warm 32 "$url" new_id.lua wret random
	t0=$(harness_now_ms)
	c0=$(harness_sql "SELECT SUM(LENGTH(payload) > 0) FROM payments WHERE dispatch_state = 'delivered'")
	for round in $(seq 1 "$ROUNDS"); do
		for mode in $([ $((round % 2)) = 1 ] && echo clearing stopped || echo stopped clearing); do
			[ "$mode" = stopped ] && kill -STOP "$d_pid"
			cpu_begin "${PIDS[@]}"
			wrk_run ret 32 "$url" new_id.lua "r$round$mode" random
			[ "$mode" = stopped ] && kill -CONT "$d_pid"
			# run MODE ROUND RPS P50 P99 ROWS CHECK PAYLOADS-LEFT
			printf 'run\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n' "$mode" "$round" \
				"$(kv "$LINE" rps)" "$(kv "$LINE" p50_ms)" "$(kv "$LINE" p99_ms)" \
				"$ROWS" "$CHECK" "$(harness_sql "SELECT SUM(LENGTH(payload) > 0) FROM payments")" >>"$tsv"
		done
	done
	log "retention: waiting for the clearing to end"
	for _ in $(seq 1 1200); do
		left=$(harness_sql "SELECT COUNT(*) FROM payments WHERE LENGTH(payload) > 0 AND received_at < UTC_TIMESTAMP() - INTERVAL $RET_DAYS DAY AND dispatch_state = 'delivered'")
		[ "$left" = 0 ] && break
		sleep 0.5
	done
	c1=$(harness_sql "SELECT SUM(LENGTH(payload) > 0) FROM payments WHERE dispatch_state = 'delivered'")
	[ "$left" = 0 ] || fail_check "retention: $left old payloads left after 10 minutes"
	printf 'meta\tclearing\t%s payloads cleared in %s ms, while the rounds ran and after (the rounds add their own pending rows, each with a payload)\n' \
		"$((c0 - c1))" "$(($(harness_now_ms) - t0))" >>"$tsv"
	retention_sizes "after the clearing" >>"$tsv"
	fill "$((year + 2 * month))" "$((year + month))" >/dev/null || { fail_check "loading a month failed"; return 1; }
	retention_sizes "a month more, with retention" >>"$tsv"
	harness_stop retention-dispatch lighttpd-retention
}

case $part in
table) run_table || exit 99 ;;
retention) run_retention || exit 99 ;;
body) run_body || exit 99 ;;
conns) run_conns || exit 99 ;;
all)
	run_body || exit 99
	run_conns || exit 99
	run_table || exit 99 ;;
esac
report
if [ "$FAILED" -gt 0 ]; then
	log "$FAILED correctness check(s) failed"
	exit 1
fi
exit 0
