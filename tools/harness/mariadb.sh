# shellcheck shell=bash disable=SC2034,SC2154 # the parts of the harness share its variables
# mariadb.sh - the harness's mariadbd (tools/harness.sh): install, start,
# first setup (database, users, schema), stop, SQL against it.

# ---- mariadb ----------------------------------------------------------------

# InnoDB settings shared by install-db and the server, sized for tests.
harness__innodb_opts=(
	--innodb-buffer-pool-size=64M
	--innodb-log-file-size=16M
	--innodb-flush-log-at-trx-commit=2
	--innodb-doublewrite=0
	# Same behaviour in containers whose seccomp profile blocks io_uring.
	--innodb-use-native-aio=0
	--innodb-buffer-pool-load-at-startup=0
	--innodb-buffer-pool-dump-at-shutdown=0
)

# Runs mariadb-install-db into the new datadir $1, logging to $2.
harness__install_db() {
	local try tmp
	# A tmpdir of its own: the bootstrap's temporary tables in a /tmp that
	# concurrent tests share were seen to vanish under it ("Could not
	# remove temporary table", then error 1051).
	tmp=$(dirname "$1")/tmp
	mkdir -p "$tmp" || return 1
	# Tried twice: a bootstrap that fails once on a loaded machine is no
	# reason to fail a test. The log's first error lines say why it failed
	# (its tail is only the tool's boilerplate).
	for try in 1 2; do
		if mariadb-install-db --no-defaults --datadir="$1" \
			--auth-root-authentication-method=socket --skip-test-db \
			--user="$harness__user" --skip-log-bin --tmpdir="$tmp" \
			"${harness__innodb_opts[@]}" >>"$2" 2>&1 </dev/null; then
			return 0
		fi
		printf 'harness: mariadb-install-db attempt %s failed:\n' "$try" >&2
		grep -i -m 10 -E 'error|fail|abort' "$2" | sed 's/^/  | /' >&2
		rm -rf "$1"
	done
	harness__error "mariadb-install-db failed (log: $2)"
	return 1
}

# Fills the new datadir $1 (install log $2): a copy of the HARNESS_CACHE
# template when that is set (installed once per server version), else a
# fresh install.
harness__mariadb_datadir() {
	local data=$1 log=$2 tpl tmp version
	harness__install_how=install
	if [ -z "${HARNESS_CACHE:-}" ]; then
		harness__install_db "$data" "$log"
		return
	fi
	harness__install_how="copy of cached template"
	read -r _ _ version _ < <(mariadbd --version)
	tpl=$HARNESS_CACHE/mariadb-${version//[!A-Za-z0-9.+-]/_}
	if [ ! -d "$tpl" ]; then
		mkdir -p "$HARNESS_CACHE" || return 1
		tmp=$(mktemp -d "$HARNESS_CACHE/.new.XXXXXX") || return 1
		if ! harness__install_db "$tmp/data" "$log"; then
			rm -rf -- "$tmp"
			return 1
		fi
		# Atomic; when a parallel test won the race, use its copy.
		mv -T "$tmp/data" "$tpl" 2>/dev/null || true
		harness__install_how="install, template cached"
		rm -rf -- "$tmp"
	fi
	cp -a "$tpl" "$data"
}

# The first start's setup over socket $1: database, application users, schema.
harness__mariadb_setup() {
	local sock=$1 h
	local sql="CREATE DATABASE IF NOT EXISTS payhook;"
	for h in 127.0.0.1 localhost; do
		sql+="CREATE USER IF NOT EXISTS 'payhook'@'$h' IDENTIFIED BY 'payhook-test';"
		sql+="GRANT ALL ON payhook.* TO 'payhook'@'$h';"
	done
	if ! mariadb --no-defaults --socket="$sock" --user="$harness__user" \
		--batch -e "$sql" </dev/null; then
		harness__error "creating database payhook and its users failed"
		return 1
	fi
	if ! mariadb --no-defaults --socket="$sock" --user="$harness__user" \
		--batch payhook <"$top_srcdir/db/schema.sql"; then
		harness__error "loading $top_srcdir/db/schema.sql failed"
		return 1
	fi
}

# harness__mariadb_cmd PORT BASE SOCKET
harness__mariadb_cmd() {
	local -a extra=()
	# On a restart the port may still be held for a moment: let mariadbd
	# retry the bind itself.
	if [ "$harness__fixed" = 1 ]; then
		extra=(--port-open-timeout=10)
	fi
	harness__cmd=(mariadbd --no-defaults --datadir="$2/data" --socket="$3"
		--port="$1" --bind-address=127.0.0.1
		--user="$harness__user" --pid-file="$2/mariadbd.pid"
		--log-error="$2/error.log" --skip-log-bin --tmpdir="$2/tmp"
		--skip-name-resolve --max-connections=300
		--character-set-server=utf8mb4
		--collation-server=utf8mb4_general_ci
		"${harness__innodb_opts[@]}" "${extra[@]}")
}

harness__mariadb_ready() {
	[ "$(timeout 5 mariadb-admin --no-defaults --socket="$3" \
		--user="$harness__user" --connect-timeout=2 ping 2>/dev/null)" = \
		'mysqld is alive' ]
}

# Starts mariadbd on 127.0.0.1 with its socket in HARNESS_DIR; the first time
# it installs the datadir, creates database payhook, users payhook@127.0.0.1
# and payhook@localhost (password payhook-test) and loads db/schema.sql. Again
# after harness_stop_mariadb: restarts on the same port and datadir. Already
# running: does nothing. Without NAME (or with mariadb) the default server,
# which PAYHOOK_MYSQL_* point at; with NAME another one, set up the same way,
# exported as MYSQL_PORT_<NAME> and MYSQL_SOCKET_<NAME>.
harness_start_mariadb() {
	local -
	set +e
	local name base sock var t0 t1 t2 what install_ms=0 setup_ms=0
	harness__install_how="existing datadir"
	harness__need_dir || return 1
	harness__instance mariadb "${1:-}" || return 1
	name=$harness__iname base=$harness__idir sock=$harness__isock var=$harness__ivar
	if harness_running "$name"; then
		return 0
	fi
	mkdir -p "$base/tmp" || return 1
	what=mariadbd${var:+ ${base##*/}}
	t0=$(harness_now_ms)
	if [ ! -d "$base/data" ]; then
		harness__mariadb_datadir "$base/data" "$base/install.log" || return 1
		install_ms=$(($(harness_now_ms) - t0))
	fi
	t1=$(harness_now_ms)
	harness__start_server --detach "$name" "$what" "$harness__iport" \
		"${HARNESS_START_TIMEOUT_MARIADB:-30}" "$base/error.log" \
		"$base/mariadbd.out" harness__mariadb_cmd harness__mariadb_ready \
		"$base" "$sock" || return 1
	t2=$(harness_now_ms)
	if [ ! -e "$harness__iready" ]; then
		harness__mariadb_setup "$sock" || return 1
		: >"$harness__iready"
		setup_ms=$(($(harness_now_ms) - t2))
	fi
	if [ -z "$var" ]; then
		MYSQL_PORT=$harness__port
		MYSQL_SOCKET=$sock
		PAYHOOK_MYSQL_HOST=127.0.0.1
		PAYHOOK_MYSQL_PORT=$harness__port
		PAYHOOK_MYSQL_USER=payhook
		PAYHOOK_MYSQL_PASSWORD=payhook-test
		PAYHOOK_MYSQL_DATABASE=payhook
		export MYSQL_PORT MYSQL_SOCKET PAYHOOK_MYSQL_HOST PAYHOOK_MYSQL_PORT \
			PAYHOOK_MYSQL_USER PAYHOOK_MYSQL_PASSWORD PAYHOOK_MYSQL_DATABASE
	else
		printf -v "MYSQL_PORT$var" '%s' "$harness__port"
		printf -v "MYSQL_SOCKET$var" '%s' "$sock"
		export "MYSQL_PORT$var" "MYSQL_SOCKET$var"
	fi
	harness__export
	if [ "$harness__fixed" = 1 ]; then
		printf '# harness: %s restarted on 127.0.0.1:%s in %s ms\n' \
			"$what" "$harness__port" "$((t2 - t1))"
	else
		printf '# harness: %s started on 127.0.0.1:%s in %s ms (%s %s ms, start %s ms, setup %s ms)\n' \
			"$what" "$harness__port" "$(($(harness_now_ms) - t0))" \
			"$harness__install_how" "$install_ms" "$((t2 - t1))" "$setup_ms"
	fi
}

harness_stop_mariadb() {
	local -
	set +e
	harness__need_dir || return 1
	harness__instance mariadb "${1:-}" || return 1
	harness_stop "$harness__iname"
}

# Runs SQL as the admin account (unix-socket authentication) in database
# payhook and prints the rows, tab-separated, without column names.
harness_sql() {
	if [ -z "${MYSQL_SOCKET:-}" ]; then
		harness__error "mariadb is not started"
		return 1
	fi
	mariadb --no-defaults --socket="$MYSQL_SOCKET" --user="$harness__user" \
		--batch --skip-column-names --database=payhook -e "$1" </dev/null
}

# harness_sql_on NAME "SQL": harness_sql on mariadb NAME (mariadb: the
# default one).
harness_sql_on() {
	local -
	set +e
	harness__need_dir || return 1
	harness__instance mariadb "${1:-}" || return 1
	if [ ! -S "$harness__isock" ]; then
		harness__error "$harness__iname is not running (no $harness__isock)"
		return 1
	fi
	mariadb --no-defaults --socket="$harness__isock" --user="$harness__user" \
		--batch --skip-column-names --database=payhook -e "${2:-}" </dev/null
}
