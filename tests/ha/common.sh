# shellcheck shell=bash
# common.sh - sourced by tests/ha/ha.test and tests/ha/ha_bench.sh: the
# highly available stack on loopback (a 3-node MariaDB Galera cluster, a
# Redis master with one replica and three Sentinels, payhook pools behind
# lighttpd, each pool an "app host" with its own order of the nodes), a
# load generator that records every answer, and the checks of those answers
# against the rows in payments.
#
#   . "$top_srcdir/tests/ha/common.sh"
#   ha_init || exit 99            harness folder, cleanup trap, E2E_* names
#   ha_start_galera || exit 99    galera1..3, GALERA_NODES (node order 1 2 3)
#   ha_start_redis || exit 99     master, replica, sentinels s1..s3
#   ha_start_app NAME WORKERS "NODES"
#                                 a payhook pool (payhook --workers, by
#                                 conf/spawn-fcgi.sh) with mysql_nodes =
#                                 NODES behind its own lighttpd; sets
#                                 HA_URL_<NAME>, HA_MASTER_<NAME>, HA_LOG_<NAME>
#   ha_start_dispatcher "NODES"  payhook-dispatch with mysql_nodes = NODES,
#                                 delivering to an HTTP target; sets
#                                 HA_TARGET_RECORD, HA_DISPATCH_LOG
#   ha_load_start TAG CLIENTS N SECONDS URL...
#   ha_pairs_start TAG CLIENTS N SECONDS URL_A URL_B
#   ha_load_wait                  wait for the load's clients
#   ha_analyse TAG EVENT_MS WINDOW_MS
#                                 sets HA[...] (see there)
#
# Every answer of a load is one line of $E2E_DIR/TAG.C.ans (client C):
#   START_MS ID POOL STATUS RESULT LATENCY_MS
# START_MS is the wall clock when curl started (ms), POOL the index of the
# URL it went to, RESULT the JSON "result" ("none" when there was no body),
# LATENCY_MS curl's time_total.
#
# The TAP lines and e2e_start_pool come from tests/e2e/common.sh.

# shellcheck source-path=SCRIPTDIR source=../e2e/common.sh
. "$top_srcdir/tests/e2e/common.sh"

HA_MASTER_NAME=payhook
declare -A HA=()

# ha_init: the harness folder and what tests/e2e/common.sh's functions need,
# without e2e_init's single servers.
ha_init() {
	harness_init || return 1
	E2E_DIR=$HARNESS_DIR/e2e
	E2E_PAYHOOK=${HA_PAYHOOK:-$top_builddir/app/payhook}
	E2E_SIGN=$top_builddir/app/payhook-sign
	mkdir -p "$E2E_DIR" || return 1
	export E2E_PAYHOOK E2E_SIGN E2E_DIR
	# The pools' settings that are the same on every app host. The
	# signature is not what is under test here (the pipeline, e2e and
	# interop tests check it): requests go unsigned, as the bench does.
	export PAYHOOK_SIGNATURE_SCHEME=none
	export PAYHOOK_LOG_LEVEL=${PAYHOOK_LOG_LEVEL:-info}
	export PAYHOOK_MYSQL_USER=payhook PAYHOOK_MYSQL_PASSWORD=payhook-test
	export PAYHOOK_MYSQL_DATABASE=payhook
	export PAYHOOK_REDIS_UNAVAILABLE=${PAYHOOK_REDIS_UNAVAILABLE:-db_only}
}

# ha_skip_unless_tools: exit 77 (skip) when something the stack needs is
# missing.
ha_skip_unless_tools() {
	local tool
	for tool in mariadbd mariadb rsync redis-server redis-cli lighttpd \
		spawn-fcgi curl "$@"; do
		command -v "$tool" >/dev/null 2>&1 ||
			skip "$tool is not installed (sh packaging/install-deps.sh)"
	done
	if [ ! -r "${HARNESS_GALERA_PROVIDER:-/usr/lib/galera/libgalera_smm.so}" ]; then
		skip "galera-4 is not installed (sh packaging/install-deps.sh)"
	fi
}

# ha_start_galera: the cluster galera1..galera3; sets GALERA_NODES, the
# "127.0.0.1:PORT" of each node in node order (GALERA_NODE[1..3]).
ha_start_galera() {
	harness_start_galera galera 3 || return 1
	GALERA_NODES=$GALERA_NODES_GALERA
	# shellcheck disable=SC2034 # for the caller
	read -r -a GALERA_NODE <<<"_ $GALERA_NODES"
}

# ha_sql "SQL": SQL on the first node that answers, waiting for every
# transaction the cluster committed (wsrep_sync_wait).
ha_sql() {
	local k
	for k in 1 2 3; do
		if harness_running "mariadb-galera$k" &&
			harness_sql_on "galera$k" "SET SESSION wsrep_sync_wait = 1; $1" 2>/dev/null; then
			return 0
		fi
	done
	echo "ha_sql: no node answered: $1" >&2
	return 1
}

# ha_start_redis: master rmaster, replica rreplica (HA_REDIS_REPLICAS of
# them: rreplica, rreplica2, ...), sentinels s1..s3 (quorum 2), and waits
# until every sentinel knows the replicas and the two other sentinels
# (their hello messages take a few seconds); exports
# PAYHOOK_REDIS_SENTINELS and PAYHOOK_REDIS_MASTER_NAME. With
# HA_REDIS_ADDR_PREFIX (e.g. 127.0.2.) each server is a host of its own:
# the master PREFIX1, replica K PREFIX(K+1), sentinel sK beside server K
# (tools/harness/redis.sh, harness__address_bind).
ha_start_redis() {
	local s k deadline info master_host=127.0.0.1 prefix=${HA_REDIS_ADDR_PREFIX:-}
	local replicas=${HA_REDIS_REPLICAS:-1} name
	[ -z "$prefix" ] || master_host=${prefix}1
	HARNESS_REDIS_ADDRESS=${prefix:+${prefix}1} harness_start_redis rmaster || return 1
	HA_REDIS_NODES=(rmaster)
	for k in $(seq 1 "$replicas"); do
		name=rreplica$([ "$k" = 1 ] || echo "$k")
		HARNESS_REDIS_ADDRESS=${prefix:+$prefix$((k + 1))} harness_start_redis "$name" || return 1
		harness_redis_on "$name" REPLICAOF "$master_host" "$REDIS_PORT_RMASTER" >/dev/null || return 1
		HA_REDIS_NODES+=("$name")
	done
	PAYHOOK_REDIS_SENTINELS=
	k=0
	for s in s1 s2 s3; do
		k=$((k + 1))
		HARNESS_REDIS_ADDRESS=${prefix:+$prefix$k} HARNESS_SENTINEL_MASTER_HOST=$master_host \
			harness_start_sentinel "$s" "$HA_MASTER_NAME" "$REDIS_PORT_RMASTER" 2 || return 1
		PAYHOOK_REDIS_SENTINELS+=${PAYHOOK_REDIS_SENTINELS:+ }127.0.0.1:$(cat "$HARNESS_DIR/$s/sentinel.port")
	done
	export PAYHOOK_REDIS_SENTINELS PAYHOOK_REDIS_MASTER_NAME=$HA_MASTER_NAME
	deadline=$(($(harness_now_ms) + 20000))
	for s in s1 s2 s3; do
		while :; do
			info=$(harness_sentinel "$s" SENTINEL master "$HA_MASTER_NAME" | paste -sd' ')
			case $info in
			*"num-slaves $replicas "*"num-other-sentinels 2 "*) break ;;
			esac
			if [ "$(harness_now_ms)" -ge "$deadline" ]; then
				echo "ha: sentinel $s does not see the replicas and the others: $info" >&2
				return 1
			fi
			sleep 0.2
		done
	done
}

# ha_sentinel_master: the master's port as sentinel s1 (else s2, s3) says.
ha_sentinel_master() {
	local s port
	for s in s1 s2 s3; do
		port=$(harness_sentinel "$s" SENTINEL get-master-addr-by-name "$HA_MASTER_NAME" 2>/dev/null | sed -n 2p)
		if [ -n "$port" ]; then
			printf '%s\n' "$port"
			return 0
		fi
	done
	return 1
}

# ha_start_app NAME WORKERS "NODES": one app host: a payhook master with
# WORKERS workers (conf/spawn-fcgi.sh, as tests/e2e/pool.test runs it) whose
# mysql_nodes is NODES (the order is this host's preference), behind a
# lighttpd of its own (conf/lighttpd-spawn-fcgi.conf). Sets HA_URL_<NAME>,
# HA_MASTER_<NAME> (the master's PID) and HA_LOG_<NAME> (the workers' log).
ha_start_app() {
	local name=$1 workers=$2 nodes=$3 var
	var=${name^^}
	PAYHOOK_MYSQL_NODES=$nodes e2e_start_pool "$name" "$workers" || return 1
	printf -v "HA_MASTER_$var" '%s' "$POOL_MASTER"
	printf -v "HA_LOG_$var" '%s' "$POOL_LOG"
	harness_fill "$top_srcdir/conf/lighttpd-spawn-fcgi.conf" \
		"$HARNESS_DIR/$name-fastcgi.conf" SOCKET="$POOL_SOCKET" || return 1
	harness_start_lighttpd "lighttpd-$name" "$HARNESS_DIR/$name-fastcgi.conf" || return 1
	printf -v "HA_URL_$var" '%s' "http://127.0.0.1:$LIGHTTPD_PORT/webhook"
	harness_wait_http "http://127.0.0.1:$LIGHTTPD_PORT/webhook" 405 10 "$LIGHTTPD_PID"
}

# ha_start_dispatcher "NODES" [NAME [VAR=VALUE...]]: an HTTP target
# (tests/servers/http_target, answering 200; started once, for every
# dispatcher) and a payhook-dispatch delivering to it, whose only database
# setting is mysql_nodes = NODES (mysql_host and mysql_port unset: the
# default 127.0.0.1:3306, where nothing listens). Timeouts of 2 s, so its
# lease is 20 s; VAR=VALUE settings come after those. Records them as
# ha-target and NAME (ha-dispatch); sets HA_TARGET_RECORD (one line per
# request, see tests/servers/http_target.c), HA_TARGET_URL and
# HA_DISPATCH_LOG (E2E_DIR/NAME.log; dispatch.log for ha-dispatch). The
# program is HA_DISPATCHER when set (make chaos-ha's planted bugs).
ha_start_dispatcher() {
	local nodes=$1 name=${2:-ha-dispatch}
	shift
	[ "$#" = 0 ] || shift
	HA_TARGET_RECORD=$E2E_DIR/target.record
	HA_DISPATCH_LOG=$E2E_DIR/${name#ha-}.log
	if ! harness_running ha-target; then
		echo 200 >"$E2E_DIR/target.control"
		: >"$HA_TARGET_RECORD"
		harness__start_helper ha-target "$E2E_DIR/target.port" \
			"$E2E_DIR/target.log" "HTTP target" \
			"$top_builddir/tests/servers/http_target" --control "$E2E_DIR/target.control" \
			--record "$HA_TARGET_RECORD" || return 1
		HA_TARGET_URL=http://127.0.0.1:$harness__port/hook
	fi
	env -u PAYHOOK_MYSQL_HOST -u PAYHOOK_MYSQL_PORT \
		PAYHOOK_MYSQL_NODES="$nodes" \
		PAYHOOK_MYSQL_READ_TIMEOUT_S=2 PAYHOOK_MYSQL_WRITE_TIMEOUT_S=2 \
		PAYHOOK_DISPATCH_TIMEOUT_MS=2000 PAYHOOK_DISPATCH_LEASE_MS=20000 \
		PAYHOOK_DISPATCH_POLL_MS=50 PAYHOOK_DISPATCH_BACKOFF_MS=200 \
		PAYHOOK_DISPATCH_URL="$HA_TARGET_URL" "$@" \
		"${HA_DISPATCHER:-$top_builddir/app/payhook-dispatch}" >>"$HA_DISPATCH_LOG" 2>&1 &
	harness_record "$name" "$!"
}

# ha_workers MASTER_PID: its workers' PIDs, sorted, on one line.
ha_workers() {
	harness_children "$1" | sort -n | tr '\n' ' '
}

# ha_post URL ID: one delivery of a new payment; prints "STATUS RESULT".
ha_post() {
	local out status body='' result=none
	out=$(mktemp "$E2E_DIR/post.XXXXXX") || { echo "000 none"; return; }
	status=$(curl -s -m 30 -o "$out" -w '%{http_code}' \
		-H 'Content-Type: application/json' \
		--data-binary "{\"transaction_id\":\"$2\",\"amount\":1999,\"currency\":\"EUR\"}" \
		"$1" 2>/dev/null) || status=000
	read -r body <"$out" 2>/dev/null
	rm -f "$out"
	if [[ $body =~ \"result\":\"([a-z_]*)\" ]]; then
		result=${BASH_REMATCH[1]}
	fi
	printf '%s %s\n' "$status" "$result"
}

# ha__send TAG C ID POOL URL: one delivery, its line appended to
# $E2E_DIR/TAG.C.ans.
ha__send() {
	local tag=$1 c=$2 id=$3 pool=$4 url=$5 out start line status secs body=''
	local result=none
	out=$E2E_DIR/$tag.$c.$pool.body
	start=$(harness_now_ms)
	line=$(curl -s -m 30 -o "$out" -w '%{http_code} %{time_total}' \
		-H 'Content-Type: application/json' \
		--data-binary "{\"transaction_id\":\"$id\",\"amount\":1999,\"currency\":\"EUR\"}" \
		"$url" 2>/dev/null)
	# curl prints 000 when no answer came; its status does not matter.
	read -r status secs <<<"${line:-000 0}"
	read -r body <"$out" 2>/dev/null
	if [[ $body =~ \"result\":\"([a-z_]*)\" ]]; then
		result=${BASH_REMATCH[1]}
	fi
	printf '%s %s %s %s %s %s\n' "$start" "$id" "$pool" "${status:-000}" \
		"$result" "$(awk -v s="${secs:-0}" 'BEGIN { printf "%.1f", s * 1000 }')" \
		>>"$E2E_DIR/$tag.$c.ans"
}

# ha__client TAG C N DEADLINE_MS URL...: up to N deliveries of new ids
# TAG-C-I, one at a time, until DEADLINE_MS; request I goes to URL (C+I) mod
# the number of URLs.
ha__client() {
	local tag=$1 c=$2 n=$3 deadline=$4 i=0 pool
	shift 4
	local -a urls=("$@")
	while [ "$i" -lt "$n" ] && [ "$(harness_now_ms)" -lt "$deadline" ] &&
		[ ! -e "$E2E_DIR/$tag.stop" ]; do
		i=$((i + 1))
		pool=$(((c + i) % ${#urls[@]}))
		ha__send "$tag" "$c" "$tag-$c-$i" "$pool" "${urls[$pool]}"
	done
}

# ha__pair_client TAG C N DEADLINE_MS URL_A URL_B: up to N ids TAG-C-I, each
# delivered to both URLs at the same moment (two curls in parallel).
ha__pair_client() {
	local tag=$1 c=$2 n=$3 deadline=$4 a=$5 b=$6 i=0
	while [ "$i" -lt "$n" ] && [ "$(harness_now_ms)" -lt "$deadline" ] &&
		[ ! -e "$E2E_DIR/$tag.stop" ]; do
		i=$((i + 1))
		ha__send "$tag" "$c.a" "$tag-$c-$i" 0 "$a" &
		ha__send "$tag" "$c.b" "$tag-$c-$i" 1 "$b"
		wait
	done
}

# ha_load_start TAG CLIENTS N SECONDS URL...: CLIENTS clients in the
# background, each sending up to N new ids for at most SECONDS, spread over
# the URLs. Each client is recorded with the harness (stopped at cleanup);
# HA_LOAD_PIDS lists them for ha_load_wait.
ha_load_start() {
	local tag=$1 clients=$2 n=$3 secs=$4 c deadline
	shift 4
	deadline=$(($(harness_now_ms) + secs * 1000))
	HA_LOAD_PIDS=()
	rm -f "$E2E_DIR/$tag".*.ans "$E2E_DIR/$tag.stop"
	for c in $(seq 1 "$clients"); do
		ha__client "$tag" "$c" "$n" "$deadline" "$@" &
		harness_record "load-$tag-$c" "$!"
		HA_LOAD_PIDS+=("$!")
	done
}

# ha_pairs_start TAG CLIENTS N SECONDS URL_A URL_B: the same with every id
# delivered to both URLs at once.
ha_pairs_start() {
	local tag=$1 clients=$2 n=$3 secs=$4 c deadline
	deadline=$(($(harness_now_ms) + secs * 1000))
	HA_LOAD_PIDS=()
	rm -f "$E2E_DIR/$tag".*.ans "$E2E_DIR/$tag.stop"
	for c in $(seq 1 "$clients"); do
		ha__pair_client "$tag" "$c" "$n" "$deadline" "$5" "$6" &
		harness_record "load-$tag-$c" "$!"
		HA_LOAD_PIDS+=("$!")
	done
}

# ha_load_wait [TAG]: with TAG, the clients stop after the request in hand;
# then waits for them.
ha_load_wait() {
	[ -z "${1:-}" ] || : >"$E2E_DIR/$1.stop"
	wait "${HA_LOAD_PIDS[@]}"
	HA_LOAD_PIDS=()
}

# ha__pct FILE P: the P-th percentile (nearest rank) of the numbers in FILE.
ha__pct() {
	sort -n "$1" | awk -v p="$2" '{ v[NR] = $1 }
		END { if (NR == 0) { print "-"; exit } i = int(NR * p / 100 + 0.999999);
		      if (i < 1) i = 1; if (i > NR) i = NR; print v[i] }'
}

# ha_analyse TAG EVENT_MS WINDOW_MS: every answer of load TAG against the
# rows of payments. Sets, in HA:
#   n ok s503 s409 s000 other  answers: all, 200, 503, 409, none (000), else
#   s503_0 s503_1  the 503s of the first and the second URL; ids: ids sent
#   lies       a 200 whose id has no row, or a 4xx (not 409) with a row
#   twice      ids with more than one row; processed2: ids answered
#              "processed" more than once
#   unknown    non-200 answers whose id has a row (commit outcome unknown)
#   norow200   ids of which no answer was 200 (pairs: nobody recorded it)
#   rows       rows of ids TAG-*
#   first503 last503  start of the first and the end of the last 503 (or
#              000), in ms after EVENT_MS ("-" when none)
#   lastbad    the end of the last answer that was not 200/409, ms after
#              EVENT_MS; recovered: the start of the first 200 after it
#   p50 p99 max        latency (ms) of all answers
#   wn wp99 wmax w503 wok  the same, the 503s and the 200s, of the
#              answers started in [EVENT_MS, EVENT_MS + WINDOW_MS)
#   outcomes   "N STATUS RESULT;..." counts
ha_analyse() {
	local tag=$1 ev=$2 win=$3 rows all line k v
	rows=$E2E_DIR/$tag.rows
	all=$E2E_DIR/$tag.all
	HA=()
	cat "$E2E_DIR/$tag".*.ans 2>/dev/null | sort -n >"$all"
	ha_sql "SELECT transaction_id, COUNT(*) FROM payments
		WHERE transaction_id LIKE '$tag-%' GROUP BY transaction_id" >"$rows" ||
		return 1
	line=$(awk -v ev="$ev" -v win="$win" -v lat="$E2E_DIR/$tag.lat" \
		-v wlat="$E2E_DIR/$tag.wlat" '
		NR == FNR { rows[$1] = $2; nrows += $2; if ($2 > 1) twice++; next }
		{
			start = $1; id = $2; st = $4; res = $5; l = $6
			end = start + int(l + 0.5)
			n++
			print l > lat
			if (start >= ev && start < ev + win) {
				wn++; print l > wlat
				if (st == 503 || st == "000") w503++
				if (st == 200) wok++
			}
			if (!(id in seen)) nids++
			seen[id] = 1
			key = st " " res; outc[key]++
			if (st == 200) {
				ok++; got200[id] = 1
				if (!(id in rows)) lies++
				if (res == "processed" && ++proc[id] == 2) processed2++
			} else {
				if (st == 503) { s503++; pool503[$3]++ }
				else if (st == 409) s409++
				else if (st == "000") s000++
				else other++
				if (id in rows) {
					if (st ~ /^4/ && st != 409) lies++
					else unknown++
				}
			}
			if (st == 503 || st == "000") {
				if (first503 == "" || start - ev < first503) first503 = start - ev
				if (last503 == "" || end - ev > last503) last503 = end - ev
			}
			if (st != 200 && st != 409 && start >= ev) {
				if (lastbad == "" || end - ev > lastbad) lastbad = end - ev
			}
			if (st == 200) okstart[n] = start
		}
		END {
			for (id in seen) if (!(id in got200)) norow200++
			rec = "-"
			for (i in okstart) {
				t = okstart[i] - ev
				if (lastbad != "" && t >= lastbad && (rec == "-" || t < rec))
					rec = t
			}
			s = ""
			for (k in outc) s = s outc[k] " " k ";"
			gsub(/ /, "~", s)
			printf "n=%d ok=%d s503=%d s503_0=%d s503_1=%d s409=%d s000=%d", \
				n, ok, s503, pool503[0], pool503[1], s409, s000
			printf " other=%d lies=%d twice=%d processed2=%d unknown=%d", \
				other, lies, twice, processed2, unknown
			printf " norow200=%d rows=%d ids=%d wn=%d wok=%d w503=%d", \
				norow200, nrows, nids, wn, wok, w503
			printf " first503=%s last503=%s lastbad=%s recovered=%s", \
				(first503 == "" ? "-" : first503), \
				(last503 == "" ? "-" : last503), \
				(lastbad == "" ? "-" : lastbad), rec
			printf " outcomes=%s\n", s
		}' "$rows" "$all")
	: >>"$E2E_DIR/$tag.lat"
	: >>"$E2E_DIR/$tag.wlat"
	for k in $line; do
		v=${k#*=}
		HA[${k%%=*}]=${v//\~/ }
	done
	HA[p50]=$(ha__pct "$E2E_DIR/$tag.lat" 50)
	HA[p99]=$(ha__pct "$E2E_DIR/$tag.lat" 99)
	HA[max]=$(ha__pct "$E2E_DIR/$tag.lat" 100)
	HA[wp99]=$(ha__pct "$E2E_DIR/$tag.wlat" 99)
	HA[wmax]=$(ha__pct "$E2E_DIR/$tag.wlat" 100)
}

# ha_check_answers WHAT: the assertions every load makes, from HA: no 200
# without its row, no refusal with a row, no id twice, no id "processed"
# twice.
ha_check_answers() {
	e2e_expect "$1: every 200 has its row, no 4xx left a row" 0 "${HA[lies]}"
	e2e_expect "$1: no id recorded twice" 0 "${HA[twice]}"
	e2e_expect "$1: no id answered processed twice" 0 "${HA[processed2]}"
}

# ha_seconds MS: MS as seconds with one decimal ("-" stays).
ha_seconds() {
	case $1 in
	- | '') printf '%s\n' - ;;
	*) awk -v m="$1" 'BEGIN { printf "%.1f\n", m / 1000 }' ;;
	esac
}
