#!/bin/bash
# report.sh - the report of a benchmark run: turns the measurements.tsv that
# tests/perf/bench/bench.sh wrote into results.md (one markdown table, then the
# callgrind profile) and latency.png (gnuplot) next to it, and prints
# results.md. bench.sh runs it at its end; "make bench-report" runs it alone,
# to redo the report (after a change here) without running the stack again.
#
#   bash tests/perf/bench/report.sh [MEASUREMENTS.TSV]
#
# (Default: $BUILD_DIR/tests/perf/bench/measurements.tsv, BUILD_DIR defaulting to
# the current folder.) Everything comes from the TSV: the measurement rows,
# one per run (KIND C ROUND RPS P50 P99 P999 NON2XX REQUESTS ROWS STATUSES
# CHECK, then CPU us/request; KIND is ph, raw, floor, php, info, mgr, sig, dup,
# dbo, and phalt / rawalt / phpalt for payhook / raw_limit / PHP under the
# other innodb_flush_log_at_trx_commit), and the run's own rows: "meta KEY VALUE" (the
# machine, the settings, the callgrind counts), "mem POOL N RSS PSS PRIVATE"
# and "failure MESSAGE"; the profile tables from callgrind.out beside it.
# Exit status 0 when the report is written, whatever the run found (bench.sh
# judges the run), 2 when the TSV is missing or not bench.sh's.

set -u
TSV=${1:-${BUILD_DIR:-$PWD}/tests/perf/bench/measurements.tsv}
if [ "$#" -gt 1 ] || [ ! -s "$TSV" ]; then
	echo "usage: report.sh [MEASUREMENTS.TSV] (no $TSV: run make bench first)" >&2
	exit 2
fi
OUT=$(cd "$(dirname "$TSV")" && pwd)
TSV=$OUT/${TSV##*/}

log() { printf '# bench report: %s\n' "$*" >&2; }

# meta KEY: the value bench.sh recorded for KEY (empty when none).
meta() {
	awk -F'\t' -v k="$1" '$1 == "meta" && $2 == k { v = $3 } END { print v }' "$TSV"
}

mode=$(meta mode)
if [ -z "$mode" ]; then
	echo "report.sh: $TSV has no meta rows: not written by this bench.sh" >&2
	exit 2
fi
ROUNDS=$(meta rounds)
SECS=$(meta seconds)
DRAIN_MS=$(meta drain_ms)
POOL=$(meta pool)
SIDE_C=$(meta side_c)
read -r -a CONCS <<<"$(meta concs)"
read -r -a ALT_CONCS <<<"$(meta alt_concs)"
FLUSH=$(meta flush)
ALT_FLUSH=$(meta alt_flush)
# Runs before these settings were recorded: flush 2, no block, no PHP.
FLUSH=${FLUSH:-2}
ALT_FLUSH=${ALT_FLUSH:-1}
PHP=$(meta php)
PHP=${PHP:-0}
CG_N1=$(meta cg_n1)
CG_N2=$(meta cg_n2)
CG_IR1=$(meta cg_ir1)
CG_IR2=$(meta cg_ir2)
CG_PER_REQ=-
if [ -n "$CG_IR1" ] && [ -n "$CG_IR2" ] && [ "$CG_N2" -gt "$CG_N1" ]; then
	CG_PER_REQ=$(((CG_IR2 - CG_IR1) / (CG_N2 - CG_N1)))
fi
mapfile -t FAILURES < <(awk -F'\t' '$1 == "failure" { print $2 }' "$TSV")
# mem_of POOL: "N RSS PSS PRIVATE" (KiB) of that pool after the runs.
mem_of() {
	awk -F'\t' -v p="$1" '$1 == "mem" && $2 == p { v = $3 " " $4 " " $5 " " $6 }
		END { print (v == "" ? "0 0 0 0" : v) }' "$TSV"
}
read -r MEM_PH_N MEM_PH_RSS MEM_PH_PSS MEM_PH_PRIV < <(mem_of payhook)
read -r MEM_FL_N MEM_FL_RSS MEM_FL_PSS MEM_FL_PRIV < <(mem_of floor)
read -r MEM_PHP_N MEM_PHP_RSS MEM_PHP_PSS MEM_PHP_PRIV < <(mem_of php)
read -r MEM_MGR_N MEM_MGR_RSS MEM_MGR_PSS MEM_MGR_PRIV < <(mem_of mgr)

# ---- callgrind: the profile of the second (larger) callgrind run -----------

CG_EXCL="(no profile: $OUT/callgrind.out is missing)"
CG_INCL=$CG_EXCL
CG_OWN=$CG_EXCL
if [ -s "$OUT/callgrind.out" ] && command -v callgrind_annotate >/dev/null 2>&1; then
	# Top 15 by exclusive and inclusive cost, from callgrind_annotate.
	cg_top() {
		callgrind_annotate --auto=no "$@" "$OUT/callgrind.out" 2>/dev/null |
			awk '/^-+$/ { sep++; next }
				sep >= 3 && $1 ~ /^[0-9,]+$/ && !/PROGRAM TOTALS/ { print; if (++n == 15) exit }'
	}
	CG_EXCL=$(cg_top --inclusive=no)
	CG_INCL=$(cg_top --inclusive=yes)
	# payhook's own functions (under the source tree of the run), inclusive,
	# as instructions per request (Ir / N2; what runs once, such as
	# pipeline_new, is spread over the N2 requests).
	CG_OWN=$(callgrind_annotate --auto=no --inclusive=yes "$OUT/callgrind.out" 2>/dev/null |
		awk -v src="$(meta src_dir)/" -v n="$CG_N2" '$1 ~ /^[0-9,]+$/ && index($0, src) {
			ir = $1; gsub(/,/, "", ir); f = $0; sub(/^.*\)  /, "", f); sub(/ \[.*$/, "", f)
			sub(src, "", f); printf "%9d  %s\n", ir / n, f }' | head -n 25)
fi

# ---- the table -------------------------------------------------------------

# stat KIND C COLUMN: "median min max" over the rounds (- when none).
stat() {
	awk -F'\t' -v k="$1" -v c="$2" -v col="$3" '$1 == k && $2 == c && $col != "" { print $col }' "$TSV" |
		sort -g | awk '{ a[NR] = $1 } END {
			if (NR == 0) { print "- - -"; exit }
			m = NR % 2 ? a[(NR + 1) / 2] : (a[NR / 2] + a[NR / 2 + 1]) / 2
			print m, a[1], a[NR] }'
}

# ratio KIND_A KIND_B C_A C_B COLUMN: per-round A/B, "median min max".
ratio() {
	awk -F'\t' -v ka="$1" -v kb="$2" -v ca="$3" -v cb="$4" -v col="$5" '
		$1 == ka && $2 == ca { a[$3] = $col }
		$1 == kb && $2 == cb { b[$3] = $col }
		END { for (r in a) if ((r in b) && b[r] > 0) print a[r] / b[r] }' "$TSV" |
		sort -g | awk '{ a[NR] = $1 } END {
			if (NR == 0) { print "- - -"; exit }
			m = NR % 2 ? a[(NR + 1) / 2] : (a[NR / 2] + a[NR / 2 + 1]) / 2
			print m, a[1], a[NR] }'
}

# ceiling_ratio C [PAYHOOK_KIND RAW_KIND]: per round, payhook's req/s (ph)
# over the ceiling of the raw (raw)
# backend work and the HTTP + FastCGI floor done one after the other on the
# same cores, 1 / (1 / raw + 1 / floor): "median min max". On a machine where
# the web server shares the CPU with the workers and the backends, this is the
# most any FastCGI receiver doing payhook's backend work could reach.
ceiling_ratio() {
	awk -F'\t' -v c="$1" -v kp="${2:-ph}" -v kr="${3:-raw}" '
		$2 == c && $1 == kp { a[$3] = $4 }
		$2 == c && $1 == kr { b[$3] = $4 }
		$2 == c && $1 == "floor" { f[$3] = $4 }
		END { for (r in a) if ((r in b) && (r in f) && b[r] > 0 && f[r] > 0)
			print a[r] * (1 / b[r] + 1 / f[r]) }' "$TSV" |
		sort -g | awk '{ a[NR] = $1 } END {
			if (NR == 0) { print "- - -"; exit }
			m = NR % 2 ? a[(NR + 1) / 2] : (a[NR / 2] + a[NR / 2 + 1]) / 2
			print m, a[1], a[NR] }'
}

# ceiling_over C RAW_KIND PEER_KIND: per round, the ceiling 1 / (1 / raw +
# 1 / floor) over the peer's req/s, "median min max": the most payhook / peer
# could be in that run (the floor from the main rounds, same round number).
ceiling_over() {
	awk -F'\t' -v c="$1" -v kr="$2" -v kp="$3" '
		$2 == c && $1 == kp { a[$3] = $4 }
		$2 == c && $1 == kr { b[$3] = $4 }
		$2 == c && $1 == "floor" { f[$3] = $4 }
		END { for (r in a) if ((r in b) && (r in f) && a[r] > 0 && b[r] > 0 && f[r] > 0)
			print 1 / (1 / b[r] + 1 / f[r]) / a[r] }' "$TSV" |
		sort -g | awk '{ a[NR] = $1 } END {
			if (NR == 0) { print "- - -"; exit }
			m = NR % 2 ? a[(NR + 1) / 2] : (a[NR / 2] + a[NR / 2 + 1]) / 2
			print m, a[1], a[NR] }'
}

# cell FORMAT "MEDIAN MIN MAX": "median (min–max)", numbers in FORMAT.
# shellcheck disable=SC2059 # the format is the caller's, one of ours
cell() {
	local m lo hi
	read -r m lo hi <<<"$2"
	if [ "$m" = - ]; then
		printf -- '-'
	elif [ "$ROUNDS" = 1 ]; then
		printf -- "$1" "$m"
	else
		printf -- "$1 ($1–$1)" "$m" "$lo" "$hi"
	fi
}

sum_col() {
	awk -F'\t' -v k="$1" -v c="$2" -v col="$3" '$1 == k && $2 == c { s += $col } END { print s + 0 }' "$TSV"
}

# checks_of KIND C: each distinct check result with its count, e.g. "ok 3/3",
# then the rows and the answers 200 (raw_limit: successes) summed.
checks_of() {
	awk -F'\t' -v k="$1" -v c="$2" '$1 == k && $2 == c {
			n++; if (!($12 in s)) o[++m] = $12; s[$12]++; rows += $10
			np = split($11, p, ",")
			for (i = 1; i <= np; i++) { split(p[i], q, ":"); if (q[1] ~ /^(2..|ok)$/) good += q[2] }
		}
		END { if (n == 0) { print "-"; exit }
			for (i = 1; i <= m; i++) printf "%s%s %d/%d", (i > 1 ? ", " : ""), o[i], s[o[i]], n
			printf "; rows %d, %s %d\n", rows, (k ~ /^raw/ ? "ok" : "200s"), good }' "$TSV"
}

# cpu_cell KIND C: medians of the CPU columns, "w (user u) + l + m + r + c =
# total".
cpu_cell() {
	local col m user sum=0
	local -a parts=()
	for col in 13 15 17 19 21; do
		read -r m _ _ <<<"$(stat "$1" "$2" "$col")"
		[ "$m" = - ] && { printf -- '-'; return; }
		m=$(printf '%.0f' "$m")
		parts+=("$m")
		sum=$((sum + m))
	done
	read -r user _ _ <<<"$(stat "$1" "$2" 14)"
	printf '%s (user %.0f) + %s + %s + %s + %s = %s' "${parts[0]}" "$user" \
		"${parts[@]:1}" "$sum"
}

row() {
	local label=$1 kind=$2 c=$3 check=$4
	printf '| %s | %s | %s | %s | %s | %s | %s | %s | %s |\n' "$label" "$c" \
		"$(cell %.0f "$(stat "$kind" "$c" 4)")" "$(cell %.2f "$(stat "$kind" "$c" 5)")" \
		"$(cell %.2f "$(stat "$kind" "$c" 6)")" "$(cell %.2f "$(stat "$kind" "$c" 7)")" \
		"$(sum_col "$kind" "$c" 8)" "$(cpu_cell "$kind" "$c")" "$check"
}

ratio_row() {
	local label=$1 a=$2 b=$3 ca=$4 cb=$5
	printf '| %s | %s | %s× | | %s× | | | | per-round ratio, median (min–max) |\n' "$label" "$ca" \
		"$(cell %.2f "$(ratio "$a" "$b" "$ca" "$cb" 4)")" "$(cell %.2f "$(ratio "$a" "$b" "$ca" "$cb" 6)")"
}

# mem_row NAME N RSS PSS PRIVATE (KiB, summed over the pool).
mem_row() {
	local n=$(($2 > 0 ? $2 : 1))
	printf '| memory, %s pool (%s workers, after the runs) | | | | | | | | PSS %d KiB total, %d per worker; RSS %d KiB total, %d per worker; private %d KiB total |\n' \
		"$1" "$2" "$4" "$(($4 / n))" "$3" "$(($3 / n))" "$5"
}

# target LABEL C "MEDIAN MIN MAX"|VALUE ge|le LIMIT FORMAT: one row of the
# targets table, judged on the median (or the single value).
target() {
	local label=$1 c=$2 m lo shown verdict
	read -r m lo _ <<<"$3"
	if [ -z "$lo" ]; then
		# shellcheck disable=SC2059 # the format is the caller's
		shown=$(printf -- "$6" "$m")
	else
		shown=$(cell "$6" "$3")
	fi
	if [ "$m" = - ] || [ -z "$m" ]; then
		verdict="not measured"
	elif awk -v m="$m" -v op="$4" -v l="$5" 'BEGIN { exit !(op == "ge" ? m >= l : m <= l) }'; then
		verdict=met
	else
		verdict="**not met**"
	fi
	printf '| %s | %s | %s %s | %s | %s |\n' "$label" "$c" \
		"$([ "$4" = ge ] && printf '≥' || printf '≤')" "$5" "$shown" "$verdict"
}

statuses_of() {
	awk -F'\t' -v k="$1" -v c="$2" '$1 == k && $2 == c { n = split($11, p, ","); for (i = 1; i <= n; i++) { split(p[i], q, ":"); s[q[1]] += q[2] } }
		END { for (k2 in s) printf "%s%s: %d", (o++ ? ", " : ""), k2, s[k2]; print "" }' "$TSV"
}

{
	printf '## payhook benchmark (%s)\n\n' "$mode"
	printf -- '- %s, %s CPUs (%s), %s\n' "$(meta date)" "$(meta cpus)" \
		"$(meta cpu_model)" "$(meta kernel)"
	printf -- '- MariaDB %s; %s; lighttpd %s; wrk -t2 --timeout 10s\n' "$(meta db_settings)" \
		"$(meta redis_version)" "$(meta lighttpd_version)"
	if [ "$PHP" != 0 ]; then
		printf -- '- PHP-FPM peer: %s, OPcache on, pm = static with %s children (tests/perf/bench/php/: phpredis pconnect, mysqli persistent, prepared INSERT in autocommit, EVAL unlock)\n' \
			"$(meta php_version)" "$POOL"
	else
		printf -- '- PHP-FPM peer: not measured (BENCH_PHP=0)\n'
	fi
	printf -- '- raw_limit: SET NX PX, one prepared INSERT in autocommit (it commits), the EVALSHA release: the least backend work of the design, no HTTP\n'
	if [ "${#ALT_CONCS[@]}" -gt 0 ]; then
		printf -- '- flush block: innodb_flush_log_at_trx_commit=%s (SET GLOBAL for the block, then %s again), payhook, raw_limit%s interleaved at %s for %s rounds\n' \
			"$ALT_FLUSH" "$FLUSH" "$([ "$PHP" != 0 ] && printf ' and PHP')" "${ALT_CONCS[*]}" "$ROUNDS"
	fi
	printf -- '- %s rounds, interleaved (alternating order), %s s per measurement (the last %s ms a drain: no new request, so every answer arrives), pools of %s workers, raw_limit --procs %s\n' \
		"$ROUNDS" "$SECS" "$DRAIN_MS" "$POOL" "$POOL"
	printf -- '- cells: median (min–max) over the rounds; latencies in ms as wrk reports them (corrected for coordinated omission; raw_limit applies the same correction)\n'
	printf -- '- CPU: user + system time per request of each process group during the run (/proc/PID/stat; for raw_limit its processes count as the workers)\n'
	printf -- '- check: rows in payments for the run tag vs answers 200 (equal unless an answer never arrived); storm: 10 rows and no 5xx\n\n'
	printf '| measurement | C | req/s | p50 ms | p99 ms | p99.9 ms | non-2xx | CPU µs/request: workers (user) + lighttpd + mariadbd + redis + client | check |\n'
	printf '| --- | --- | --- | --- | --- | --- | --- | --- | --- |\n'
	for c in "${CONCS[@]}"; do
		row "payhook (signature none, log warn)" ph "$c" "$(checks_of ph "$c")"
		row "raw_limit (lock + autocommitted INSERT + release, no HTTP; 8 procs, shared queue)" raw "$c" "$(checks_of raw "$c")"
		row "floor (fcgi_floor: HTTP + FastCGI only)" floor "$c" "-"
		[ "$PHP" != 0 ] && row "PHP-FPM peer (PHP 8.2, 8 children)" php "$c" "$(checks_of php "$c")"
	done
	for c in "${ALT_CONCS[@]}"; do
		row "payhook, flush=$ALT_FLUSH" phalt "$c" "$(checks_of phalt "$c")"
		row "raw_limit, flush=$ALT_FLUSH" rawalt "$c" "$(checks_of rawalt "$c")"
		[ "$PHP" != 0 ] && row "PHP-FPM peer, flush=$ALT_FLUSH" phpalt "$c" "$(checks_of phpalt "$c")"
	done
	row "payhook, log_level info" info "$SIDE_C" "$(checks_of info "$SIDE_C")"
	row "payhook, pool manager (--workers 8, metrics)" mgr "$SIDE_C" "$(checks_of mgr "$SIDE_C")"
	row "payhook, signed (standard)" sig "$SIDE_C" "$(checks_of sig "$SIDE_C")"
	for c in "${CONCS[@]}"; do
		row "payhook, Redis stopped (db_only)" dbo "$c" "$(checks_of dbo "$c")"
	done
	row "duplicate storm (10 ids)" dup "$SIDE_C" \
		"$(checks_of dup "$SIDE_C"); rows per round $(awk -F'\t' '$1 == "dup" { printf "%s%s", (n++ ? "/" : ""), $10 }' "$TSV"); answers $(statuses_of dup "$SIDE_C")"
	for c in "${CONCS[@]}"; do
		ratio_row "payhook / raw_limit" ph raw "$c" "$c"
	done
	for c in "${CONCS[@]}"; do
		ratio_row "payhook / floor" ph floor "$c" "$c"
	done
	for c in "${CONCS[@]}"; do
		printf '| payhook / ceiling 1/(1/raw + 1/floor) | %s | %s× | | | | | | the backend work and HTTP + FastCGI sharing the same cores |\n' \
			"$c" "$(cell %.2f "$(ceiling_ratio "$c")")"
	done
	if [ "$PHP" != 0 ]; then
		for c in "${CONCS[@]}"; do
			ratio_row "payhook / PHP-FPM, flush=$FLUSH" ph php "$c" "$c"
		done
		for c in "${ALT_CONCS[@]}"; do
			ratio_row "payhook / PHP-FPM, flush=$ALT_FLUSH" phalt phpalt "$c" "$c"
		done
		for c in "${CONCS[@]}"; do
			printf '| ceiling / PHP-FPM, flush=%s | %s | %s× | | | | | | payhook / PHP if payhook reached the ceiling of the same round |\n' \
				"$FLUSH" "$c" "$(cell %.2f "$(ceiling_over "$c" raw php)")"
		done
		for c in "${ALT_CONCS[@]}"; do
			printf '| ceiling / PHP-FPM, flush=%s | %s | %s× | | | | | | payhook / PHP if payhook reached the ceiling of the same round |\n' \
				"$ALT_FLUSH" "$c" "$(cell %.2f "$(ceiling_over "$c" rawalt phpalt)")"
		done
	fi
	for c in "${ALT_CONCS[@]}"; do
		printf '| payhook / ceiling 1/(1/raw + 1/floor), flush=%s | %s | %s× | | | | | | raw_limit of the flush block, the floor of the same round number |\n' \
			"$ALT_FLUSH" "$c" "$(cell %.2f "$(ceiling_ratio "$c" phalt rawalt)")"
	done
	for c in "${ALT_CONCS[@]}"; do
		ratio_row "payhook, flush=$ALT_FLUSH / flush=$FLUSH" phalt ph "$c" "$c"
	done
	for c in "${ALT_CONCS[@]}"; do
		ratio_row "raw_limit, flush=$ALT_FLUSH / flush=$FLUSH" rawalt raw "$c" "$c"
	done
	ratio_row "log info / log warn" info ph "$SIDE_C" "$SIDE_C"
	ratio_row "pool manager + metrics / spawn-fcgi pool" mgr ph "$SIDE_C" "$SIDE_C"
	ratio_row "signed / unsigned" sig ph "$SIDE_C" "$SIDE_C"
	for c in "${CONCS[@]}"; do
		ratio_row "db_only, Redis stopped / with Redis" dbo ph "$c" "$c"
	done
	mem_row payhook "$MEM_PH_N" "$MEM_PH_RSS" "$MEM_PH_PSS" "$MEM_PH_PRIV"
	mem_row floor "$MEM_FL_N" "$MEM_FL_RSS" "$MEM_FL_PSS" "$MEM_FL_PRIV"
	[ "$MEM_MGR_N" != 0 ] && mem_row "payhook under the pool manager (with its master)" "$MEM_MGR_N" "$MEM_MGR_RSS" "$MEM_MGR_PSS" "$MEM_MGR_PRIV"
	[ "$PHP" != 0 ] && mem_row "PHP-FPM" "$MEM_PHP_N" "$MEM_PHP_RSS" "$MEM_PHP_PSS" "$MEM_PHP_PRIV"
	printf '| callgrind, one signed worker | 1 | | | | | | | %s instructions/request = (%s − %s) / (%s − %s) |\n' \
		"$CG_PER_REQ" "${CG_IR2:-?}" "${CG_IR1:-?}" "$CG_N2" "$CG_N1"
	printf '| memcheck, one signed worker | 1 | | | | | | | %s allocations/request, (N2 − N1) = (%s − %s) requests |\n' \
		"$(meta allocs_per_request | sed 's/^$/-/')" "$(meta mc_n2)" "$(meta mc_n1)"
	printf '| strace -c, one signed worker | 1 | | | | | | | %s system calls/request: %s |\n' \
		"$(meta syscalls_per_request | sed 's/^$/-/')" "$(meta syscalls_by_name)"
	printf '\n### targets of issue 13 (judged on the median)\n\n'
	printf '| target | C | wanted | measured | |\n| --- | --- | --- | --- | --- |\n'
	for c in "${CONCS[@]}"; do
		[ "$c" -le 32 ] || continue
		target "payhook / PHP-FPM req/s, flush=$FLUSH" "$c" "$(ratio ph php "$c" "$c" 4)" ge 3.0 %.2f
		target "payhook / PHP-FPM p99, flush=$FLUSH" "$c" "$(ratio ph php "$c" "$c" 6)" le 0.5 %.2f
	done
	for c in "${ALT_CONCS[@]}"; do
		target "payhook / PHP-FPM req/s, flush=$ALT_FLUSH" "$c" "$(ratio phalt phpalt "$c" "$c" 4)" ge 3.0 %.2f
		target "payhook / PHP-FPM p99, flush=$ALT_FLUSH" "$c" "$(ratio phalt phpalt "$c" "$c" 6)" le 0.5 %.2f
	done
	for c in "${CONCS[@]}"; do
		target "payhook / ceiling 1/(1/raw + 1/floor), flush=$FLUSH" "$c" "$(ceiling_ratio "$c")" ge 0.9 %.2f
	done
	for c in "${ALT_CONCS[@]}"; do
		target "payhook / ceiling 1/(1/raw + 1/floor), flush=$ALT_FLUSH" "$c" "$(ceiling_ratio "$c" phalt rawalt)" ge 0.9 %.2f
	done
	target "payhook pool PSS after the run, MiB ($MEM_PH_N workers)" "" \
		"$(awk -v n="$MEM_PH_N" -v k="$MEM_PH_PSS" 'BEGIN { if (n > 0) printf "%.2f", k / 1024; else print "-" }')" le 8 %.2f
	target "instructions per request, one worker (callgrind)" 1 "$CG_PER_REQ" le 100000 %s
	printf '\nrun time %s s; raw measurements: %s\n' "$(meta run_seconds)" "$TSV"
	# shellcheck disable=SC2016 # markdown code fences, not expansions
	printf '\n### callgrind: top 15 by exclusive cost (%s signed requests, %s)\n\n```\n%s\n```\n' \
		"$CG_N2" "callgrind_annotate $OUT/callgrind.out" "$CG_EXCL"
	# shellcheck disable=SC2016 # markdown code fences, not expansions
	printf '\n### callgrind: top 15 by inclusive cost\n\n```\n%s\n```\n' "$CG_INCL"
	# shellcheck disable=SC2016 # markdown code fences, not expansions
	printf '\n### callgrind: payhook functions, inclusive instructions per request (Ir / %s)\n\n```\n%s\n```\n' \
		"$CG_N2" "$CG_OWN"
	if [ "${#FAILURES[@]}" -gt 0 ]; then
		printf '\n### correctness checks that FAILED\n\n'
		printf -- '- %s\n' "${FAILURES[@]}"
	fi
} >"$OUT/results.md"
# The report goes into the repository (tests/perf/bench/results/): no path of the
# machine it ran on, only $BUILD and paths relative to the source tree.
build_root=$(cd "$OUT/../../.." && pwd)
sed -i -e "s|$build_root|\$BUILD|g" -e "s|$(meta src_dir)/||g" "$OUT/results.md"
cat "$OUT/results.md"

# ---- the plot --------------------------------------------------------------

if command -v gnuplot >/dev/null 2>&1; then
	# One line per concurrency: C, then p50 and p99 of payhook, raw_limit,
	# the floor and the PHP-FPM peer, as a gnuplot datablock (no temporary
	# file; a value not measured is "-", which gnuplot skips).
	latency=$(for c in "${CONCS[@]}"; do
		printf '%s' "$c"
		for k in ph raw floor php; do
			for col in 5 6; do
				read -r m _ _ < <(stat "$k" "$c" "$col")
				printf ' %s' "$m"
			done
		done
		printf '\n'
	done)
	plot_php=
	if [ "$PHP" != 0 ]; then
		# shellcheck disable=SC2016 # gnuplot's datablock, not an expansion
		plot_php=', $latency using 1:8 with linespoints lw 2 lc rgb "#9467bd" title "PHP-FPM p50", $latency using 1:9 with linespoints lw 2 dt 2 lc rgb "#9467bd" title "PHP-FPM p99"'
	fi
	if ! err=$(gnuplot 2>&1 <<-EOF
	\$latency << EOD
	$latency
	EOD
	set terminal pngcairo size 900,600 noenhanced
	set output "$OUT/latency.png"
	set title "payhook latency vs concurrency ($mode, median of $ROUNDS rounds)"
	set xlabel "concurrency (connections / logical clients)"
	set ylabel "latency (ms, log scale)"
	set logscale y
	set logscale x 2
	set xrange [${CONCS[0]} * 0.7:${CONCS[-1]} * 1.4]
	set xtics ($(IFS=,; printf '%s' "${CONCS[*]}"))
	set key top left
	set grid
	plot \$latency using 1:2 with linespoints lw 2 lc rgb "#d62728" title "payhook p50", \
	     \$latency using 1:3 with linespoints lw 2 dt 2 lc rgb "#d62728" title "payhook p99", \
	     \$latency using 1:4 with linespoints lw 2 lc rgb "#1f77b4" title "raw_limit p50", \
	     \$latency using 1:5 with linespoints lw 2 dt 2 lc rgb "#1f77b4" title "raw_limit p99", \
	     \$latency using 1:6 with linespoints lw 2 lc rgb "#2ca02c" title "floor p50", \
	     \$latency using 1:7 with linespoints lw 2 dt 2 lc rgb "#2ca02c" title "floor p99"$plot_php
	EOF
	); then
		log "gnuplot failed: $err"
	elif [ -s "$OUT/latency.png" ]; then
		log "plot: $OUT/latency.png"
	fi
else
	log "gnuplot not installed: no plot"
fi

log "results: $OUT/results.md"
if [ "${#FAILURES[@]}" -gt 0 ]; then
	log "the run recorded ${#FAILURES[@]} failed correctness check(s): see results.md"
fi
exit 0
