#!/bin/bash
# check-deb.sh - "make check-deb": the Debian package on a fresh Debian 12
# root, as an admin uses it (as root).
#
#   BUILD_DIR=... SRC_DIR=... VERSION=... check-deb.sh
#
# Takes $BUILD_DIR/deb/payhook_VERSION-1_ARCH.deb (make deb) and builds a
# second package from the same "make dist" tarball (VERSION-2, whose
# conffile differs: the upgrade). On a fresh copy of a minimal Debian 12
# root (packaging/release/debian-root.sh, cached; MariaDB, Redis, lighttpd,
# systemd's tools, man-db, logrotate, curl; none of payhook's libraries),
# entered with chroot:
#   - apt-get install ./payhook_*.deb resolves the dependencies from Debian;
#     the user, the conffile's owner and mode, the man pages are checked;
#   - systemd-analyze verify on every unit, systemd-analyze security's
#     exposure of each service (printed);
#   - the admin writes the database and the configuration as README.Debian
#     says, starts payhook and payhook-dispatch with their units' ExecStart
#     lines as the units' User, Group and SupplementaryGroups (no systemd
#     runs in a root), and lighttpd with the package's example; a signed
#     delivery through lighttpd is recorded once and handed on;
#   - logrotate rotates the log: both programs write to the new file;
#   - the upgrade with --force-confold keeps the admin's configuration and
#     asks nothing; remove keeps the configuration, logs, user and data;
#     purge removes the configuration and logs and keeps the user.
# lintian's verdict is build-deb.sh's (make deb), checked here again.
# MariaDB, Redis, lighttpd and payhook listen on 127.0.0.1 on ports chosen
# at run time and are stopped by PID; /proc is unmounted and the copy
# removed. Prints TAP (tests/lib/tap.sh).
# shellcheck disable=SC2016 # dpkg-query's own ${field} syntax throughout
set -uo pipefail

here=$(cd "$(dirname "$0")" && pwd)
src=${SRC_DIR:-$here/../..}
build=${BUILD_DIR:-.}
freeport=$build/tools/freeport
version=${VERSION:?VERSION is the package version, as configure has it}
# shellcheck source=../../tests/lib/tap.sh
. "$src/tests/lib/tap.sh"
die() { not_ok "$*"; exit 1; }

[ "$(id -u)" -eq 0 ] || die "check-deb needs root (debootstrap, chroot, mount)"
[ -x "$freeport" ] || die "no $freeport: run it through make check-deb"
deb=$(find "$build/deb" -maxdepth 1 -name "payhook_$version-1_*.deb" 2>/dev/null | head -n 1)
[ -n "$deb" ] || die "no $build/deb/payhook_$version-1_*.deb: run make deb"
tarball=$build/payhook-$version.tar.gz
[ -f "$tarball" ] || die "no $tarball: run make deb"

# ---- lintian (make deb ran it) --------------------------------------------
if [ -f "$build/deb/lintian.txt" ]; then
	expect "lintian: no error or warning" "" \
		"$(grep -E '^[EW]: ' "$build/deb/lintian.txt")"
	grep -E '^[IP]: ' "$build/deb/lintian.txt" | sed 's/^/# lintian: /'
else
	not_ok "lintian did not check the package (is it installed?)"
fi

# ---- the upgrade: VERSION-2, with another conffile ------------------------
# The new conffile has one more line than the old: what a changed default
# looks like to dpkg.
upgrade_mark="retry_after_s = 7"
prepare="set -e
sed -i 's/^# retry_after_s = 5\$/$upgrade_mark/' conf/payhook.conf.example
grep -qx '$upgrade_mark' conf/payhook.conf.example
{ printf 'payhook ($version-2) bookworm; urgency=medium\n\n'
  printf '  * The upgrade of make check-deb: retry_after_s = 7.\n\n'
  printf ' -- payhook maintainers <payhook@example.org>  %s\n\n' \"\$(date -R)\"
  cat debian/changelog; } >debian/changelog.new
mv debian/changelog.new debian/changelog"
DEB_PREPARE=$prepare bash "$here/build-deb.sh" "$tarball" "$build/deb/upgrade" \
	>"$build/deb/upgrade.log" 2>&1 || {
	tail -n 20 "$build/deb/upgrade.log" | sed 's/^/# /'
	die "build the upgrade package"
}
deb2=$(find "$build/deb/upgrade" -maxdepth 1 -name "payhook_$version-2_*.deb" | head -n 1)

# ---- the root --------------------------------------------------------------
root_tar=$(bash "$src/packaging/release/debian-root.sh" bookworm "lighttpd
	mariadb-server mariadb-client redis-server systemd man-db logrotate curl
	ca-certificates adduser") || die "could not build the Debian root"
root=$(mktemp -d "${TMPDIR:-/var/tmp}/payhook-deb.XXXXXX")
[ -n "$root" ] || die "mktemp"
chmod 755 "$root"
pids_started=''
# Stops what this run started in the root by PID, then whatever is left
# there, and removes the copy once /proc is unmounted.
# shellcheck source=../release/root-stop.sh
. "$src/packaging/release/root-stop.sh"
cleanup() {
	# shellcheck disable=SC2086 # the PIDs, none when not started
	root_stop "$root" check-deb $pids_started
}
tap_cleanup cleanup
tar -C "$root" -xf "$root_tar" || die "unpack the root"
mount -t proc proc "$root/proc" || die "mount /proc in the root"
cp /etc/resolv.conf "$root/etc/resolv.conf" 2>/dev/null
in_root() {
	chroot "$root" env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin HOME=/root \
		DEBIAN_FRONTEND=noninteractive LC_ALL=C.UTF-8 "$@"
}
cp "$deb" "$deb2" "$root/tmp/" || die "copy the packages into the root"
deb_in=/tmp/$(basename "$deb") deb2_in=/tmp/$(basename "$deb2")

# ---- install -----------------------------------------------------------------
# (json-c, MariaDB's and curl's libraries come with systemd and MariaDB.)
payhook_libs=(libfcgi0ldbl libhiredis0.14)
has=$(in_root dpkg-query -W -f '${db:Status-Status} ${Package}\n' "${payhook_libs[@]}" \
	2>/dev/null | grep '^installed')
expect "the root has neither libfcgi nor hiredis before" "" "$has"
in_root sh -c "apt-get update -qq && apt-get install -y -qq $deb_in" \
	>"$root/tmp/install.log" 2>&1 </dev/null
rc=$?
expect "apt-get install ./payhook_$version-1.deb (dependencies from Debian)" 0 "$rc" ||
	{ tail -n 20 "$root/tmp/install.log" | sed 's/^/# /'; exit 1; }
expect "installed version" "$version-1" "$(in_root dpkg-query -W -f '${Version}' payhook)"
expect "apt brought libfcgi and hiredis from Debian" "installed installed" \
	"$(in_root dpkg-query -W -f '${db:Status-Status} ' "${payhook_libs[@]}" | sed 's/ $//')"
yes_no() { if in_root "$@" >/dev/null; then echo yes; else echo no; fi; }
# Every program "make install" installs (BIN_PROGRAMS: the Makefile's
# bin_PROGRAMS), payhook-reconcile too once it is there.
for prog in ${BIN_PROGRAMS:-payhook payhook-dispatch payhook-sign}; do
	expect "/usr/bin/${prog##*/}" yes "$(yes_no test -x "/usr/bin/${prog##*/}")"
done
expect "the payhook user is a system user" yes \
	"$(in_root getent passwd payhook | awk -F: '$3 < 1000 { print "yes" }')"
expect "/etc/payhook/payhook.conf: root:payhook 0640" "root:payhook 640" \
	"$(in_root stat -c '%U:%G %a' /etc/payhook/payhook.conf)"
expect "it is a conffile" yes "$(in_root dpkg-query -W -f '${Conffiles}' payhook |
	grep -q ' /etc/payhook/payhook.conf ' && echo yes)"
expect "/var/log/payhook: payhook's" payhook "$(in_root stat -c %U /var/log/payhook)"
for f in schema.sql migrate-8-lifecycle-items.sql payhook.conf.example; do
	expect "/usr/share/payhook/$f" yes "$(yes_no test -f "/usr/share/payhook/$f")"
done
for page in payhook.8 payhook-dispatch.8 payhook-sign.1 payhook.conf.5; do
	name=${page%.*} sect=${page##*.}
	out=$(in_root env MANWIDTH=80 man --warnings "$sect" "$name" 2>&1 >/dev/null)
	expect "man $sect $name renders without a warning" "" "$out"
done
expect "man payhook.conf describes mysql_password" 1 \
	"$(in_root env MANWIDTH=200 man 5 payhook.conf 2>/dev/null | grep -c '^ *mysql_password (string, secret')"

# ---- the units -----------------------------------------------------------
units=/lib/systemd/system
for unit in payhook.service payhook-dispatch.service payhook-reconcile.service \
	payhook-reconcile.timer payhook-reconcile-daemon.service; do
	in_root test -f "$units/$unit" || { not_ok "$units/$unit missing"; continue; }
	out=$(in_root systemd-analyze verify "$units/$unit" 2>&1)
	# payhook-reconcile.service may come before its program.
	if ! in_root test -e /usr/bin/payhook-reconcile; then
		out=$(grep -v 'Command /usr/bin/payhook-reconcile is not executable' <<<"$out")
	fi
	expect "systemd-analyze verify $unit" "" "$out"
done
for unit in payhook payhook-dispatch payhook-reconcile payhook-reconcile-daemon; do
	out=$(in_root systemd-analyze security --offline=true "$units/$unit.service" 2>&1)
	level=$(sed -n 's/.*Overall exposure level for [^:]*: \([0-9.]*\).*/\1/p' <<<"$out")
	grep -E '✗|Overall' <<<"$out" | sed "s/^/# $unit: /"
	if [ -n "$level" ] && awk -v l="$level" 'BEGIN { exit !(l < 2.0) }'; then
		ok "systemd-analyze security $unit.service: exposure $level (below 2.0)"
	else
		not_ok "systemd-analyze security $unit.service: exposure '$level'"
	fi
done

# ---- the database, as README.Debian says ----------------------------------
mysql_port=$("$freeport") || die "a free port"
redis_port=$("$freeport") || die "a free port"
web_port=$("$freeport") || die "a free port"
db_password=deb-test-$$
in_root install -d -o mysql -g mysql /run/mysqld
in_root /usr/sbin/mariadbd --user=mysql --bind-address=127.0.0.1 \
	--port="$mysql_port" --socket=/run/mysqld/mysqld.sock \
	--log-error=/var/log/mysql/error.log >/dev/null 2>&1 &
pids_started="$pids_started $!"
for _ in $(seq 1 100); do
	in_root mariadb-admin --socket=/run/mysqld/mysqld.sock ping >/dev/null 2>&1 && break
	sleep 0.2
done
in_root mariadb --socket=/run/mysqld/mysqld.sock -e "CREATE DATABASE payhook;
	CREATE USER 'payhook'@'127.0.0.1' IDENTIFIED BY '$db_password';
	GRANT SELECT, INSERT, UPDATE ON payhook.* TO 'payhook'@'127.0.0.1';" ||
	die "MariaDB: the database and its user"
in_root sh -c 'mariadb --socket=/run/mysqld/mysqld.sock payhook </usr/share/payhook/schema.sql' ||
	die "MariaDB: /usr/share/payhook/schema.sql"
in_root runuser -u redis -- redis-server --bind 127.0.0.1 --port "$redis_port" \
	--save '' --appendonly no --daemonize no >/dev/null 2>&1 &
pids_started="$pids_started $!"

# The admin's edits of the conffile: kept across the upgrade.
secret=whsec_$(head -c 32 /dev/urandom | base64)
cat >>"$root/etc/payhook/payhook.conf" <<EOF

# ---- this host (check-deb) ----
mysql_port = $mysql_port
mysql_password = $db_password
redis_port = $redis_port
webhook_secret = $secret
dispatch_command = cat >>/var/log/payhook/handed-on.jsonl
dispatch_poll_ms = 100
EOF
# The secret for payhook-sign, readable by root only.
(umask 077 && echo "$secret" >"$root/root/webhook.secret")

# ---- the programs, as their units start them ------------------------------
# unit_value UNIT KEY: the value of KEY= in the installed unit.
unit_value() { sed -n "s/^$2=//p" "$root$units/$1" | tail -n 1; }
# start_unit UNIT: ExecStart as User, Group and SupplementaryGroups, with
# the RuntimeDirectory and LogsDirectory systemd would make and its UMask;
# prints the PID.
start_unit() {
	local unit=$1 user group groups exec dir
	user=$(unit_value "$unit" User) group=$(unit_value "$unit" Group)
	groups=$(unit_value "$unit" SupplementaryGroups)
	exec=$(unit_value "$unit" ExecStart)
	dir=$(unit_value "$unit" RuntimeDirectory)
	[ -z "$dir" ] || in_root install -d -o "$user" -g "$group" \
		-m "$(unit_value "$unit" RuntimeDirectoryMode)" "/run/$dir"
	dir=$(unit_value "$unit" LogsDirectory)
	[ -z "$dir" ] || in_root install -d -o "$user" -g "$group" \
		-m "$(unit_value "$unit" LogsDirectoryMode)" "/var/log/$dir"
	chroot --userspec="$user:$group" ${groups:+--groups="$groups"} "$root" \
		env -i PATH=/usr/bin:/bin LC_ALL=C.UTF-8 \
		sh -c "umask $(unit_value "$unit" UMask); exec $exec" \
		>>"$root/tmp/$unit.out" 2>&1 &
	echo $!
}
expect "payhook --check-config as the unit's user" 0 \
	"$(chroot --userspec=payhook:payhook "$root" /usr/bin/payhook --check-config \
		-c /etc/payhook/payhook.conf >"$root/tmp/check.out" 2>&1; echo $?)" ||
	sed 's/^/# /' "$root/tmp/check.out"
payhook_pid=$(start_unit payhook.service)
dispatch_pid=$(start_unit payhook-dispatch.service)
pids_started="$pids_started $payhook_pid $dispatch_pid"
for _ in $(seq 1 100); do
	[ -S "$root/run/payhook/payhook.sock" ] && break
	sleep 0.1
done
expect "payhook.service's socket: group www-data, mode 0660" "www-data 660" \
	"$(stat -c '%G %a' "$root/run/payhook/payhook.sock" 2>&1)" ||
	sed 's/^/# payhook: /' "$root/tmp/payhook.service.out"

# ---- lighttpd, as /usr/share/doc/payhook/examples says --------------------
in_root cp /usr/share/doc/payhook/examples/lighttpd-spawn-fcgi.conf \
	/etc/lighttpd/conf-available/50-payhook.conf
in_root lighty-enable-mod payhook >/dev/null 2>&1 || die "lighty-enable-mod payhook"
sed -i "s/^server.port .*/server.port = $web_port\nserver.bind = \"127.0.0.1\"/" \
	"$root/etc/lighttpd/lighttpd.conf"
in_root install -d -o www-data -g www-data /run/lighttpd
in_root lighttpd -D -f /etc/lighttpd/lighttpd.conf >"$root/tmp/lighttpd.out" 2>&1 &
pids_started="$pids_started $!"
for _ in $(seq 1 100); do
	curl -s -o /dev/null "http://127.0.0.1:$web_port/" && break
	sleep 0.1
done

# deliver TRANSACTION: a signed standard delivery through lighttpd, signed
# by the package's payhook-sign; prints "STATUS RESULT".
deliver() {
	local body=/tmp/$1.json headers line args=()
	in_root payhook-sign --sample payment --transaction-id "$1" --amount 1999 \
		--currency EUR >"$root$body"
	headers=$(in_root payhook-sign --secret-file /root/webhook.secret "$body") || return
	while IFS= read -r line; do args+=(-H "$line"); done <<<"$headers"
	curl -sS -o "$root/tmp/answer" -w '%{http_code}' -X POST \
		-H 'Content-Type: application/json' "${args[@]}" \
		--data-binary "@$root$body" "http://127.0.0.1:$web_port/webhook"
	printf ' %s\n' "$(sed -n 's/.*"result": *"\([a-z_]*\)".*/\1/p' "$root/tmp/answer")"
}
rows() {
	in_root mariadb --socket=/run/mysqld/mysqld.sock -N -e \
		"SELECT COUNT(*) FROM payments WHERE transaction_id LIKE 'tx_deb_%'" payhook
}
# wait_for FILE PATTERN: up to 10 s for a line of the root's FILE.
wait_for() {
	for _ in $(seq 1 100); do
		grep -q "$2" "$root$1" 2>/dev/null && return 0
		sleep 0.1
	done
	return 1
}
expect "a signed delivery through lighttpd" "200 processed" "$(deliver tx_deb_1)" || {
	sed 's/^/# payhook: /' "$root/tmp/payhook.service.out"
	sed 's/^/# lighttpd: /' "$root/tmp/lighttpd.out"
	tail -n 5 "$root/var/log/payhook/payhook.log" | sed 's/^/# log: /'
}
expect "its redelivery" "200 duplicate" "$(deliver tx_deb_1)"
expect "rows in payments" 1 "$(rows)"
if wait_for /var/log/payhook/handed-on.jsonl tx_deb_1; then
	ok "payhook-dispatch handed the payment on (dispatch_command)"
else
	not_ok "payhook-dispatch did not hand tx_deb_1 on"
	sed 's/^/# dispatch: /' "$root/tmp/payhook-dispatch.service.out"
fi
expect "payhook logs to /var/log/payhook/payhook.log" yes \
	"$(grep -q 'transaction_id=tx_deb_1' "$root/var/log/payhook/payhook.log" && echo yes)"

# ---- log rotation ---------------------------------------------------------
in_root logrotate -f /etc/logrotate.d/payhook >"$root/tmp/logrotate.out" 2>&1
expect "logrotate -f /etc/logrotate.d/payhook" 0 "$?" || sed 's/^/# /' "$root/tmp/logrotate.out"
if in_root test -f /var/log/payhook/payhook.log.1; then
	ok "payhook.log.1 is the old log"
else
	not_ok "no payhook.log.1 after the rotation"
fi
expect "the new payhook.log: payhook:payhook 0640" "payhook:payhook 640" \
	"$(in_root stat -c '%U:%G %a' /var/log/payhook/payhook.log 2>&1)"
# The programs look at the path again at most once a second.
sleep 1.2
expect "a delivery after the rotation" "200 processed" "$(deliver tx_deb_2)"
if wait_for /var/log/payhook/payhook.log 'transaction_id=tx_deb_2'; then
	ok "payhook writes to the new log"
else
	not_ok "payhook's line about tx_deb_2 is not in the new log"
fi
if wait_for /var/log/payhook/handed-on.jsonl tx_deb_2 &&
	wait_for /var/log/payhook/payhook.log 'payhook-dispatch.*tx_deb_2'; then
	ok "payhook-dispatch writes to the new log"
else
	not_ok "payhook-dispatch's line about tx_deb_2 is not in the new log"
	tail -n 5 "$root/var/log/payhook/payhook.log" | sed 's/^/# log: /'
fi
kill -TERM "$payhook_pid" "$dispatch_pid" 2>/dev/null
for _ in $(seq 1 100); do
	kill -0 "$payhook_pid" 2>/dev/null || kill -0 "$dispatch_pid" 2>/dev/null || break
	sleep 0.1
done

# ---- upgrade, remove, purge ---------------------------------------------
in_root apt-get install -y -qq -o Dpkg::Options::=--force-confold "$deb2_in" \
	>"$root/tmp/upgrade.log" 2>&1 </dev/null
expect "upgrade to $version-2 with --force-confold, no question" 0 "$?" ||
	tail -n 20 "$root/tmp/upgrade.log" | sed 's/^/# /'
expect "upgraded version" "$version-2" "$(in_root dpkg-query -W -f '${Version}' payhook)"
expect "the admin's configuration survived" yes \
	"$(grep -q "^mysql_password = $db_password\$" "$root/etc/payhook/payhook.conf" && echo yes)"
expect "the package's new conffile is beside it (payhook.conf.dpkg-dist)" yes \
	"$(grep -qx "$upgrade_mark" "$root/etc/payhook/payhook.conf.dpkg-dist" 2>/dev/null && echo yes)"
expect "after the upgrade: root:payhook 0640" "root:payhook 640" \
	"$(in_root stat -c '%U:%G %a' /etc/payhook/payhook.conf)"
expect "payhook --check-config after the upgrade" 0 \
	"$(chroot --userspec=payhook:payhook "$root" /usr/bin/payhook --check-config \
		-c /etc/payhook/payhook.conf >/dev/null 2>&1; echo $?)"

in_root apt-get remove -y -qq payhook >"$root/tmp/remove.log" 2>&1 </dev/null
expect "apt-get remove payhook" 0 "$?"
expect "remove: the programs are gone" no \
	"$(in_root test -e /usr/bin/payhook && echo yes || echo no)"
expect "remove: the configuration, the logs and the user stay" "yes yes yes" \
	"$(yes_no test -f /etc/payhook/payhook.conf) $(yes_no test -f /var/log/payhook/payhook.log.1) $(yes_no getent passwd payhook)"
expect "remove: the payments stay" 2 "$(rows)"
in_root apt-get purge -y -qq payhook >"$root/tmp/purge.log" 2>&1 </dev/null
expect "apt-get purge payhook" 0 "$?"
expect "purge: the configuration and the logs are gone" "no no" \
	"$(yes_no test -e /etc/payhook) $(yes_no test -e /var/log/payhook)"
expect "purge: the payhook user stays (Debian policy)" yes "$(yes_no getent passwd payhook)"
expect "purge: dpkg no longer knows payhook" "" \
	"$(in_root dpkg-query -W -f '${db:Status-Status}' payhook 2>/dev/null | grep -v not-installed)"

echo "check-deb: $(tap_passed) passed, $(tap_failed) failed"
[ "$(tap_failed)" -eq 0 ]
