# shellcheck shell=bash disable=SC2034,SC2154 # the parts of the harness share its variables
# galera.sh - the tests' MariaDB Galera clusters (tests/lib/harness.sh):
# nodes started, recovered and waited for until Synced.

# ---- Galera cluster ---------------------------------------------------------

# The Galera provider library (Debian's galera-4).
harness__galera_provider=${HARNESS_GALERA_PROVIDER:-/usr/lib/galera/libgalera_smm.so}
# The nodes run as this user. As root it is mysql: the joiner's SST (the
# rsync daemon of wsrep_sst_rsync) drops privileges to the server's user, so
# the datadirs must be that user's. Otherwise the current user, as above.
harness__galera_user=$harness__user

# harness__galera_prepare: checks what a cluster needs; as root, lets the
# mysql user reach HARNESS_DIR (mktemp made it 0700) and run the nodes.
harness__galera_prepare() {
	local tool
	if [ ! -r "$harness__galera_provider" ]; then
		harness__error "no Galera provider at $harness__galera_provider (install galera-4)"
		return 1
	fi
	for tool in mariadbd mariadb rsync wsrep_sst_rsync; do
		if ! command -v "$tool" >/dev/null 2>&1; then
			harness__error "$tool is not installed (mariadb-server, rsync)"
			return 1
		fi
	done
	if [ "$(id -u)" = 0 ]; then
		if ! id mysql >/dev/null 2>&1; then
			harness__error "running as root, the Galera nodes need the mysql user (mariadb-server creates it)"
			return 1
		fi
		harness__galera_user=mysql
		chmod 711 "$HARNESS_DIR" || return 1
	fi
}

# harness__galera_addr K: node K's address for Galera's own traffic
# (gcomm, IST, SST): 127.0.0.1, or HARNESS_GALERA_ADDR_PREFIX followed by K
# (e.g. 127.0.1. gives 127.0.1.K). Galera binds its outgoing gcomm
# connections to that address too, so that a test in a network namespace of
# its own can cut the link between two nodes by their addresses (make
# chaos-ha). The SQL port stays on 127.0.0.1.
harness__galera_addr() {
	if [ -n "${HARNESS_GALERA_ADDR_PREFIX:-}" ]; then
		printf '%s%s\n' "$HARNESS_GALERA_ADDR_PREFIX" "$1"
	else
		printf '127.0.0.1\n'
	fi
}

# harness__galera_cmd PORT BASE SOCKET NAME K [MARIADBD OPTIONS...]: node K
# of cluster NAME, its Galera ports from BASE/galera.ports (gcomm, IST, SST),
# the cluster's addresses from $HARNESS_DIR/NAME.galera.
harness__galera_cmd() {
	local port=$1 base=$2 sock=$3 name=$4 k=$5 gport iport sport cluster addr
	shift 5
	read -r gport iport sport <"$base/galera.ports" || return 1
	read -r cluster <"$HARNESS_DIR/$name.galera" || return 1
	addr=$(harness__galera_addr "$k")
	harness__cmd=(mariadbd --no-defaults --datadir="$base/data" --socket="$sock"
		--port="$port" --bind-address=127.0.0.1 --port-open-timeout=10
		--user="$harness__galera_user" --pid-file="$base/mariadbd.pid"
		--log-error="$base/error.log" --skip-log-bin
		--skip-name-resolve --max-connections=300
		--character-set-server=utf8mb4
		--collation-server=utf8mb4_general_ci
		"${harness__innodb_opts[@]}"
		--binlog-format=ROW --default-storage-engine=InnoDB
		--innodb-autoinc-lock-mode=2
		--wsrep-on=ON --wsrep-provider="$harness__galera_provider"
		--wsrep-cluster-name="payhook-$name"
		--wsrep-cluster-address="gcomm://$cluster"
		--wsrep-node-name="$name$k"
		--wsrep-node-address="$addr:$gport"
		--wsrep-node-incoming-address="127.0.0.1:$port"
		--wsrep-sst-method=rsync
		--wsrep-sst-receive-address="$addr:$sport"
		--wsrep-provider-options="gmcast.listen_addr=tcp://$addr:$gport;ist.recv_addr=$addr:$iport;gcache.size=128M${HARNESS_GALERA_OPTIONS:+;$HARNESS_GALERA_OPTIONS}"
		"$@")
}

# harness_galera_state NAME K: prints node K's "wsrep_local_state_comment
# wsrep_cluster_status wsrep_ready" (e.g. "Synced Primary ON"), asked over
# its socket as the admin account; fails when it does not answer.
harness_galera_state() {
	local -
	set +e
	local out k v state='?' cluster='?' ready='?'
	harness__need_dir || return 1
	harness__instance mariadb "${1:-}${2:-}" || return 1
	[ -S "$harness__isock" ] || return 1
	out=$(timeout 5 mariadb --no-defaults --socket="$harness__isock" \
		--user="$harness__user" --connect-timeout=2 --batch \
		--skip-column-names -e "SHOW STATUS WHERE Variable_name IN \
		('wsrep_local_state_comment', 'wsrep_cluster_status', 'wsrep_ready')" \
		</dev/null 2>/dev/null) || return 1
	while read -r k v; do
		case $k in
		wsrep_local_state_comment) state=$v ;;
		wsrep_cluster_status) cluster=$v ;;
		wsrep_ready) ready=$v ;;
		esac
	done <<<"$out"
	printf '%s %s %s\n' "$state" "$cluster" "$ready"
}

# Ready: the node is Synced in the primary component and takes queries.
harness__galera_ready() {
	[ "$(harness_galera_state "$4" "$5")" = "Synced Primary ON" ]
}

# harness_galera_wait NAME K STATE SECONDS: polls node K until
# harness_galera_state prints STATE (a glob); fails after SECONDS.
harness_galera_wait() {
	local -
	set +e
	local deadline now
	deadline=$(($(harness_now_ms) + ${4:-30} * 1000))
	while :; do
		now=$(harness_galera_state "$1" "$2")
		# shellcheck disable=SC2254 # STATE is a glob on purpose
		case $now in $3) return 0 ;; esac
		if [ "$(harness_now_ms)" -ge "$deadline" ]; then
			harness__error "galera node $1$2 is '${now:-not answering}', not '$3' after ${4:-30} s"
			return 1
		fi
		sleep 0.1
	done
}

# harness__galera_recover BASE NAME K: after a crash (grastate.dat's seqno
# -1) the node's position is only in InnoDB: mariadbd --wsrep-recover reads
# it (as the Debian service's galera_recovery does), so that the node
# rejoins by IST instead of a full SST. Sets harness__galera_pos
# (UUID:SEQNO), empty when none was found.
harness__galera_recover() {
	local base=$1 port
	harness__galera_pos=
	read -r port <"$base/mariadb.port" 2>/dev/null || port=0
	harness__galera_cmd "$port" "$base" "$base/recover.sock" "$2" "$3" \
		--wsrep-recover --log-error="$base/recover.log" || return 1
	timeout 120 "${harness__cmd[@]}" </dev/null >>"$base/mariadbd.out" 2>&1
	harness__galera_pos=$(sed -n 's/.*WSREP: Recovered position: *\([^ ]*\).*/\1/p' \
		"$base/recover.log" 2>/dev/null | tail -n 1)
	# An all-zero UUID or seqno -1: nothing to recover from.
	case $harness__galera_pos in
	00000000-0000-0000-0000-000000000000:* | *:-1) harness__galera_pos= ;;
	esac
}

# harness_start_galera_node NAME K [MARIADBD OPTIONS...]: starts node K of
# cluster NAME (made by harness_start_galera), or restarts it after
# harness_stop_mariadb NAMEK or harness_kill mariadb-NAMEK, and returns once
# it is Synced (HARNESS_START_TIMEOUT_GALERA, 120 s). A node that crashed is
# first run with --wsrep-recover and started at the position found, so it
# rejoins by IST. Options go to mariadbd (--wsrep-new-cluster bootstraps).
harness_start_galera_node() {
	local -
	set +e
	local name=${1:-} k=${2:-} base sock t0 how=started
	local -a extra=()
	harness__need_dir || return 1
	if [ ! -s "$HARNESS_DIR/$name.galera" ] || [ -z "$k" ]; then
		harness__error "usage: harness_start_galera_node NAME K [OPTIONS...] (after harness_start_galera NAME N)"
		return 1
	fi
	shift 2
	harness__instance mariadb "$name$k" || return 1
	base=$harness__idir sock=$harness__isock
	if harness_running "$harness__iname"; then
		return 0
	fi
	t0=$(harness_now_ms)
	if grep -q '^seqno: *-1' "$base/data/grastate.dat" 2>/dev/null; then
		harness__galera_recover "$base" "$name" "$k" || return 1
		if [ -n "$harness__galera_pos" ]; then
			extra=(--wsrep-start-position="$harness__galera_pos")
			how="recovered at $harness__galera_pos ($(($(harness_now_ms) - t0)) ms) and restarted"
		fi
	elif [ -f "$base/data/grastate.dat" ]; then
		how=restarted
	fi
	harness__start_server --detach "$harness__iname" "galera node $name$k" \
		"$harness__iport" "${HARNESS_START_TIMEOUT_GALERA:-120}" \
		"$base/error.log" "$base/mariadbd.out" harness__galera_cmd \
		harness__galera_ready "$base" "$sock" "$name" "$k" "$@" \
		"${extra[@]}" || return 1
	harness__export
	printf '# harness: galera node %s%s %s on 127.0.0.1:%s, Synced in %s ms\n' \
		"$name" "$k" "$how" "$harness__port" "$(($(harness_now_ms) - t0))"
}

# harness_start_galera NAME [N]: a MariaDB Galera cluster of N nodes (3)
# on loopback: node K is mariadb NAMEK (its files in $HARNESS_DIR/NAMEK,
# recorded as mariadb-NAMEK, so harness_sql_on NAMEK, harness_stop_mariadb
# NAMEK and harness_kill mariadb-NAMEK work), each with four ports from the
# kernel (MySQL, gcomm, IST, SST). Node 1 bootstraps the cluster
# (--wsrep-new-cluster) and gets the database, users and schema as
# harness_start_mariadb does; the others join it by SST (rsync), one after
# the other. Returns once all are Synced. Exports GALERA_NODES_<NAME> (the
# "127.0.0.1:PORT ..." list for mysql_nodes, in node order) and
# MYSQL_PORT_<NAME><K> / MYSQL_SOCKET_<NAME><K>.
harness_start_galera() {
	local -
	set +e
	local name=${1:-} n=${2:-3} k base t0 cluster='' nodes='' var
	harness__need_dir || return 1
	harness__check_name harness_start_galera "$name" || return 1
	if [ -z "$n" ] || [ -n "${n//[0-9]/}" ] || [ "$n" -lt 1 ]; then
		harness__error "usage: harness_start_galera NAME [N]"
		return 1
	fi
	if [ -e "$HARNESS_DIR/$name.galera" ]; then
		harness__error "galera cluster $name exists: restart its nodes with harness_start_galera_node"
		return 1
	fi
	harness__galera_prepare || return 1
	t0=$(harness_now_ms)
	for k in $(seq 1 "$n"); do
		harness__instance mariadb "$name$k" || return 1
		base=$harness__idir
		mkdir -p "$base" || return 1
		# Node 1's datadir is installed; a joiner's is filled by its SST.
		if [ "$k" = 1 ]; then
			harness__mariadb_datadir "$base/data" "$base/install.log" || return 1
		else
			mkdir -p "$base/data" || return 1
		fi
		harness_free_port >"$harness__iport" || return 1
		printf '%s %s %s\n' "$(harness_free_port)" "$(harness_free_port)" \
			"$(harness_free_port)" >"$base/galera.ports" || return 1
		if [ "$harness__galera_user" != "$harness__user" ]; then
			chown -R "$harness__galera_user:" "$base" || return 1
		fi
		read -r var _ <"$base/galera.ports"
		cluster+=${cluster:+,}$(harness__galera_addr "$k"):$var
		nodes+=${nodes:+ }127.0.0.1:$(cat "$harness__iport")
	done
	printf '%s\n' "$cluster" >"$HARNESS_DIR/$name.galera" || return 1
	harness_start_galera_node "$name" 1 --wsrep-new-cluster || return 1
	harness__instance mariadb "${name}1"
	harness__mariadb_setup "$harness__isock" || return 1
	: >"$harness__iready"
	for k in $(seq 2 "$n"); do
		harness_start_galera_node "$name" "$k" || return 1
	done
	var=GALERA_NODES_${name^^}
	printf -v "$var" '%s' "$nodes"
	export "${var?}"
	harness__export
	printf '# harness: galera cluster %s of %s nodes (%s) up in %s ms\n' \
		"$name" "$n" "$nodes" "$(($(harness_now_ms) - t0))"
}
