#!/bin/bash
# check-deb.sh - "make check-deb": the Debian package on a fresh Debian 12
# host, as an admin uses it (as root). The host is a copy of a minimal
# Debian 12 root (packaging/release/debian-root.sh, cached; MariaDB, Redis,
# lighttpd, nginx, ssl-cert, systemd, man-db, logrotate, curl; none of
# payhook's libraries) booted with systemd as PID 1 by systemd-nspawn -b,
# so that the package's units run as systemd runs them, sandbox and all.
#
#   BUILD_DIR=... SRC_DIR=... VERSION=... check-deb.sh
#
# Takes $BUILD_DIR/deb/payhook_VERSION-1_ARCH.deb (make deb); builds
# VERSION-2 from the same "make dist" tarball with another example
# configuration and the same conffile (an ordinary release), and
# VERSION-3, VERSION-2 repacked with a changed conffile. In the booted root:
#   - apt-get install ./payhook_*.deb resolves the dependencies from Debian;
#     the user, the conffile, /var/log/payhook and /var/lib/payhook, the
#     man pages and what the docs name are checked, and no unit is enabled;
#   - systemd-analyze verify on every unit, systemd-analyze security's
#     exposure of each service (printed);
#   - the admin writes the database and a Stripe-only configuration as
#     README.Debian says (metrics_file in /var/lib/payhook, shared by the
#     three programs), runs README.Debian's check before any unit started,
#     enables payhook.socket, payhook and payhook-dispatch, and puts the
#     package's lighttpd and nginx examples in front; signed deliveries
#     through both (as www-data, to a socket payhook's processes have no
#     group of) are recorded once and handed on; the counters of payhook
#     and payhook-dispatch are in the one metrics_file; payhook stopped,
#     the socket stays and the next delivery starts it again;
#     payhook-reconcile.service records a payment the webhook never brought
#     from a fake Stripe API (tests/servers/provider_api, on this machine);
#   - logrotate rotates the log: both programs write to the new file;
#   - the upgrade to VERSION-2 with plain apt-get install and no terminal
#     asks nothing and keeps the admin's configuration, restarts payhook
#     and leaves its socket open; VERSION-3 with --force-confold (as the
#     docs say for a changed conffile) keeps it and puts the new one beside
#     it; remove keeps the configuration, logs, state, user and data;
#     purge removes the configuration, logs and state and keeps the user.
# lintian's verdict is build-deb.sh's (make deb), checked here again.
# MariaDB, Redis, lighttpd, nginx and the fake API listen on 127.0.0.1 on
# ports chosen at run time (the root shares this machine's network); the
# root's own timers that would take apt's lock and MariaDB's socket unit
# (*:3306) are masked. At the end the
# root is powered off and removed, the fake stopped by PID. Prints TAP
# (tests/lib/tap.sh).
# shellcheck disable=SC2016 # dpkg-query's own ${field} syntax throughout
set -uo pipefail

here=$(cd "$(dirname "$0")" && pwd)
src=${SRC_DIR:-$here/../..}
build=${BUILD_DIR:-.}
freeport=$build/tools/freeport
provider_api=$build/tests/servers/provider_api
version=${VERSION:?VERSION is the package version, as configure has it}
# shellcheck source=../../tests/lib/tap.sh
. "$src/tests/lib/tap.sh"
die() { not_ok "$*"; exit 1; }

[ "$(id -u)" -eq 0 ] || die "check-deb needs root (debootstrap, systemd-nspawn)"
[ -x "$freeport" ] || die "no $freeport: run it through make check-deb"
[ -x "$provider_api" ] || die "no $provider_api: run it through make check-deb"
for tool in systemd-nspawn nsenter dpkg-deb; do
	command -v "$tool" >/dev/null ||
		die "check-deb needs $tool (sh packaging/release/install-deps.sh)"
done
deb=$(find "$build/deb" -maxdepth 1 -name "payhook_$version-1_*.deb" 2>/dev/null | head -n 1)
[ -n "$deb" ] || die "no $build/deb/payhook_$version-1_*.deb: run make deb"
tarball=$build/payhook-$version.tar.gz
[ -f "$tarball" ] || die "no $tarball: run make deb"
work=$build/deb/check
rm -rf "$work"
mkdir -p "$work"

# ---- lintian (make deb ran it) --------------------------------------------
if [ -f "$build/deb/lintian.txt" ]; then
	expect "lintian: no error or warning" "" \
		"$(grep -E '^[EW]: ' "$build/deb/lintian.txt")"
	grep -E '^[IP]: ' "$build/deb/lintian.txt" | sed 's/^/# lintian: /'
else
	not_ok "lintian did not check the package (is it installed?)"
fi

# ---- the upgrades ------------------------------------------------------------
# VERSION-2: a release with a new default in the example (what every new key
# does to it), and the conffile as it was.
upgrade_mark="# retry_after_s = 7"
prepare="set -e
sed -i 's/^# retry_after_s = 5\$/$upgrade_mark/' conf/payhook.conf.example
grep -qx '$upgrade_mark' conf/payhook.conf.example
{ printf 'payhook ($version-2) bookworm; urgency=medium\n\n'
  printf '  * The upgrade of make check-deb: retry_after_s = 7 in the example.\n\n'
  printf ' -- payhook maintainers <payhook@example.org>  %s\n\n' \"\$(date -R)\"
  cat debian/changelog; } >debian/changelog.new
mv debian/changelog.new debian/changelog"
DEB_PREPARE=$prepare bash "$here/build-deb.sh" "$tarball" "$build/deb/upgrade" \
	>"$build/deb/upgrade.log" 2>&1 || {
	tail -n 20 "$build/deb/upgrade.log" | sed 's/^/# /'
	die "build the upgrade package"
}
deb2=$(find "$build/deb/upgrade" -maxdepth 1 -name "payhook_$version-2_*.deb" | head -n 1)
expect "VERSION-2 ships the same conffile as VERSION-1" "" \
	"$(cmp <(dpkg-deb --fsys-tarfile "$deb" | tar -xOf - ./etc/payhook/payhook.conf) \
		<(dpkg-deb --fsys-tarfile "$deb2" | tar -xOf - ./etc/payhook/payhook.conf) 2>&1)"
# VERSION-3: VERSION-2 whose conffile changed (a release that must say so).
conf_mark="# retry_after_s = 9"
tree=$work/v3
dpkg-deb -R "$deb2" "$tree" || die "unpack $deb2"
sed -i "s/^Version: .*/Version: $version-3/" "$tree/DEBIAN/control"
printf '\n# Version 3 (check-deb): a changed conffile.\n%s\n' "$conf_mark" \
	>>"$tree/etc/payhook/payhook.conf"
deb3=$work/$(basename "${deb2/-2_/-3_}")
dpkg-deb --root-owner-group -b "$tree" "$deb3" >/dev/null || die "repack $deb3"

# ---- the root, booted ------------------------------------------------------
root_tar=$(bash "$src/packaging/release/debian-root.sh" bookworm "lighttpd nginx
	ssl-cert mariadb-server mariadb-client redis-server systemd man-db logrotate
	curl ca-certificates adduser") || die "could not build the Debian root"
root=$(mktemp -d "${TMPDIR:-/var/tmp}/payhook-deb.XXXXXX")
[ -n "$root" ] || die "mktemp"
chmod 755 "$root"
pids_started='' nspawn_pid='' init=''
# Powers the root off (nspawn passes SIGTERM on as a shutdown; SIGKILL
# after 30 s ends its PID namespace), stops what this run started here by
# PID, and removes the copy.
# shellcheck source=../release/root-stop.sh
. "$src/packaging/release/root-stop.sh"
cleanup() {
	if [ -n "$nspawn_pid" ]; then
		kill -TERM "$nspawn_pid" 2>/dev/null
		for _ in $(seq 1 300); do
			kill -0 "$nspawn_pid" 2>/dev/null || break
			sleep 0.1
		done
		kill -KILL "$nspawn_pid" 2>/dev/null
		wait "$nspawn_pid" 2>/dev/null
	fi
	# shellcheck disable=SC2086 # the PIDs, none when not started
	root_stop "$root" check-deb $pids_started
}
tap_cleanup cleanup
tar -C "$root" -xf "$root_tar" || die "unpack the root"
# A host has no policy-rc.d: the package's scripts start and restart units.
rm -f "$root/usr/sbin/policy-rc.d"
# apt's daily timers would take apt's lock while the test installs;
# mariadb.socket would listen on *:3306 (the root shares this machine's
# network): mariadb.service listens where this run says.
for t in apt-daily.timer apt-daily-upgrade.timer mariadb.socket; do
	ln -sf /dev/null "$root/etc/systemd/system/$t"
done
cp /etc/resolv.conf "$root/etc/resolv.conf" 2>/dev/null
# The servers the root starts at boot, on ports of this run, on 127.0.0.1.
mysql_port=$("$freeport") || die "a free port"
redis_port=$("$freeport") || die "a free port"
web_port=$("$freeport") || die "a free port"
tls_port=$("$freeport") || die "a free port"
printf '[mysqld]\nport = %s\nbind-address = 127.0.0.1\n' "$mysql_port" \
	>"$root/etc/mysql/mariadb.conf.d/99-check-deb.cnf"
sed -i "s/^port 6379\$/port $redis_port/" "$root/etc/redis/redis.conf"
grep -qx "port $redis_port" "$root/etc/redis/redis.conf" || die "redis.conf: no port line"
# (lighttpd.conf's use-ipv6.pl would add [::]:PORT.)
sed -i -e "s/^server.port .*/server.port = $web_port\nserver.bind = \"127.0.0.1\"/" \
	-e '/use-ipv6\.pl/d' "$root/etc/lighttpd/lighttpd.conf"
rm -f "$root/etc/nginx/sites-enabled/default"

systemd-nspawn --quiet --keep-unit --register=no -M "payhook-deb-$$" -D "$root" \
	-b --console=pipe </dev/null >"$work/nspawn.log" 2>&1 &
nspawn_pid=$!
# systemd's PID here: nspawn's child once it runs systemd.
for _ in $(seq 1 100); do
	for child in $(cat "/proc/$nspawn_pid/task/"*/children 2>/dev/null); do
		[ "$(cat "/proc/$child/comm" 2>/dev/null)" = systemd ] && init=$child
	done
	[ -n "$init" ] && break
	sleep 0.1
done
[ -n "$init" ] || { sed 's/^/# nspawn: /' "$work/nspawn.log"; die "systemd-nspawn -b: no systemd"; }
in_root() {
	nsenter --target "$init" --mount --uts --ipc --net --pid --cgroup --root --wd \
		env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin HOME=/root \
		DEBIAN_FRONTEND=noninteractive LC_ALL=C.UTF-8 "$@"
}
# systemctl answers once systemd listens on its socket.
for _ in $(seq 1 300); do
	case $(in_root systemctl is-system-running 2>&1) in
	"" | "Failed to connect"* | offline) sleep 0.1 ;;
	*) break ;;
	esac
done
state=$(in_root timeout 120 systemctl is-system-running --wait 2>&1)
case $state in
running | degraded) ok "the root boots with systemd as PID 1 ($state)" ;;
*) die "the root did not boot: '$state'" ;;
esac
in_root systemctl --failed --plain --no-legend 2>&1 | sed 's/^/# failed at boot: /'
yes_no() { if in_root "$@" >/dev/null 2>&1; then echo yes; else echo no; fi; }
# journal UNIT: its last lines, as comments.
journal() { in_root journalctl -u "$1" --no-pager -n 15 2>&1 | sed "s/^/# $1: /"; }
# The root's /tmp is a tmpfs of its own: the files this run puts there go
# to root's home.
in_dir=/root/check-deb
mkdir -p "$root$in_dir"
cp "$deb" "$deb2" "$deb3" "$root$in_dir/" || die "copy the packages into the root"
deb_in=$in_dir/$(basename "$deb") deb2_in=$in_dir/$(basename "$deb2")
deb3_in=$in_dir/$(basename "$deb3")

# ---- install -----------------------------------------------------------------
# (json-c, MariaDB's and curl's libraries come with systemd and MariaDB.)
payhook_libs=(libfcgi0ldbl libhiredis0.14)
has=$(in_root dpkg-query -W -f '${db:Status-Status} ${Package}\n' "${payhook_libs[@]}" \
	2>/dev/null | grep '^installed')
expect "the root has neither libfcgi nor hiredis before" "" "$has"
in_root sh -c "apt-get update -qq && apt-get install -y -qq $deb_in" \
	>"$work/install.log" 2>&1 </dev/null
rc=$?
expect "apt-get install ./payhook_$version-1.deb (dependencies from Debian)" 0 "$rc" ||
	{ tail -n 20 "$work/install.log" | sed 's/^/# /'; exit 1; }
expect "installed version" "$version-1" "$(in_root dpkg-query -W -f '${Version}' payhook)"
expect "apt brought libfcgi and hiredis from Debian" "installed installed" \
	"$(in_root dpkg-query -W -f '${db:Status-Status} ' "${payhook_libs[@]}" | sed 's/ $//')"
# Every program "make install" installs (BIN_PROGRAMS: the Makefile's
# bin_PROGRAMS).
programs=
for prog in ${BIN_PROGRAMS:-payhook payhook-dispatch payhook-reconcile payhook-sign}; do
	programs="$programs ${prog##*/}"
	expect "/usr/bin/${prog##*/}" yes "$(yes_no test -x "/usr/bin/${prog##*/}")"
done
expect "the payhook user is a system user" yes \
	"$(in_root getent passwd payhook | awk -F: '$3 < 1000 { print "yes" }')"
expect "/etc/payhook/payhook.conf: root:payhook 0640" "root:payhook 640" \
	"$(in_root stat -c '%U:%G %a' /etc/payhook/payhook.conf)"
expect "it is a conffile" yes "$(in_root dpkg-query -W -f '${Conffiles}' payhook |
	grep -q ' /etc/payhook/payhook.conf ' && echo yes)"
expect "/var/log/payhook: payhook:payhook 0750" "payhook:payhook 750" \
	"$(in_root stat -c '%U:%G %a' /var/log/payhook 2>&1)"
expect "/var/lib/payhook (the units' StateDirectory): payhook:payhook 0750" \
	"payhook:payhook 750" "$(in_root stat -c '%U:%G %a' /var/lib/payhook 2>&1)"
for f in schema.sql migrate-8-lifecycle-items.sql payhook.conf.example; do
	expect "/usr/share/payhook/$f" yes "$(yes_no test -f "/usr/share/payhook/$f")"
done
units=/lib/systemd/system
unit_files="payhook.socket payhook.service payhook-dispatch.service
	payhook-reconcile.service payhook-reconcile.timer"
# (payhook-reconcile.service is static: its timer starts it.)
expect "no unit is enabled at install" "disabled disabled disabled disabled" \
	"$(in_root systemctl is-enabled payhook.socket payhook.service \
		payhook-dispatch.service payhook-reconcile.timer 2>&1 | tr '\n' ' ' | sed 's/ $//')"

# ---- the documentation -------------------------------------------------
for page in payhook.8 payhook-dispatch.8 payhook-reconcile.8 payhook-sign.1 payhook.conf.5; do
	name=${page%.*} sect=${page##*.}
	out=$(in_root env MANWIDTH=80 man --warnings "$sect" "$name" 2>&1 >/dev/null)
	expect "man $sect $name renders without a warning" "" "$out"
done
expect "man payhook.conf describes mysql_password" 1 \
	"$(in_root env MANWIDTH=200 man 5 payhook.conf 2>/dev/null | grep -c '^ *mysql_password (string, secret')"
# What names the package's programs names each one: README.Debian, the
# package's description, payhook.conf(5)'s NAME (every program but
# payhook-sign reads the file) and payhook(8)'s SEE ALSO.
man_section() {
	in_root env MANWIDTH=200 man "$1" "$2" 2>/dev/null |
		awk -v s="$3" '/^[A-Z]/ { on = ($0 == s); next } on'
}
# (dh_compress compresses it when it passes 4 KiB.)
readme=$(in_root sh -c 'zcat -f /usr/share/doc/payhook/README.Debian*')
description=$(in_root dpkg-query -W -f '${Description}' payhook)
conf_name=$(man_section 5 payhook.conf NAME)
see_also=$(man_section 8 payhook "SEE ALSO")
missing=
for p in $programs; do
	grep -qw -- "$p" <<<"$readme" || missing+=" README.Debian:$p"
	grep -qw -- "$p" <<<"$description" || missing+=" description:$p"
	[ "$p" = payhook ] || grep -qw -- "$p" <<<"$see_also" || missing+=" payhook(8):$p"
	[ "$p" = payhook-sign ] || grep -qw -- "$p" <<<"$conf_name" || missing+=" payhook.conf(5):$p"
done
for u in $unit_files; do
	grep -qw -- "$u" <<<"$readme" || missing+=" README.Debian:$u"
done
expect "README.Debian, the description and the man pages name every program and unit" \
	"" "${missing# }"
expect "README.Debian says nothing of a version to come" "" \
	"$(grep -n 'later version' <<<"$readme")"
left=$(in_root sh -c 'grep -v "^[[:space:]]*#" /usr/share/doc/payhook/examples/*.conf |
	grep "@[A-Z_]*@"')
expect "the web servers' examples leave nothing to fill in" "" "$left"
expect "the example configuration is in the examples" yes \
	"$(yes_no test -s /usr/share/doc/payhook/examples/payhook.conf.example)"

# ---- the units -----------------------------------------------------------
for unit in $unit_files; do
	in_root test -f "$units/$unit" || { not_ok "$units/$unit missing"; continue; }
	out=$(in_root systemd-analyze verify "$units/$unit" 2>&1)
	expect "systemd-analyze verify $unit" "" "$out"
done
for unit in payhook payhook-dispatch payhook-reconcile; do
	out=$(in_root systemd-analyze security --offline=true "$units/$unit.service" 2>&1)
	level=$(sed -n 's/.*Overall exposure level for [^:]*: \([0-9.]*\).*/\1/p' <<<"$out")
	grep -E '✗|Overall' <<<"$out" | sed "s/^/# $unit: /"
	if [ -n "$level" ] && awk -v l="$level" 'BEGIN { exit !(l < 2.0) }'; then
		ok "systemd-analyze security $unit.service: exposure $level (below 2.0)"
	else
		not_ok "systemd-analyze security $unit.service: exposure '$level'"
	fi
done
expect "payhook-reconcile.service: a start timeout (a oneshot has none by default)" \
	3h "$(in_root systemctl show -p TimeoutStartUSec --value payhook-reconcile.service)"

# ---- the database, as README.Debian says ----------------------------------
db_password=deb-test-$$
for _ in $(seq 1 100); do
	in_root mariadb-admin ping >/dev/null 2>&1 && break
	sleep 0.2
done
in_root mariadb -e "CREATE DATABASE payhook;
	CREATE USER 'payhook'@'127.0.0.1' IDENTIFIED BY '$db_password';
	GRANT SELECT, INSERT, UPDATE ON payhook.* TO 'payhook'@'127.0.0.1';" ||
	{ journal mariadb; die "MariaDB: the database and its user"; }
in_root sh -c 'mariadb payhook </usr/share/payhook/schema.sql' ||
	die "MariaDB: /usr/share/payhook/schema.sql"
expect "redis-server.service runs" active "$(in_root systemctl is-active redis-server)" ||
	journal redis-server

# ---- the fake Stripe API, for payhook-reconcile ---------------------------
api_key=rk_test_checkdeb$$
: >"$work/events"
: >"$work/faults"
"$provider_api" --mode stripe --key "$api_key" --events "$work/events" \
	--faults "$work/faults" --log "$work/api.log" >"$work/api.port" 2>"$work/api.err" &
pids_started="$pids_started $!"
api_port=
for _ in $(seq 1 100); do
	read -r api_port 2>/dev/null <"$work/api.port" && break
	sleep 0.05
done
[ -n "$api_port" ] || die "provider_api did not start"

# ---- the configuration: the admin's edits (kept across the upgrades) -------
secret=whsec_$(head -c 32 /dev/urandom | base64)
cat >>"$root/etc/payhook/payhook.conf" <<EOF

# ---- this host (check-deb) ----
providers = stripe
stripe_secret = $secret
mysql_password = $db_password
mysql_port = $mysql_port
redis_port = $redis_port
dispatch_command = cat >>/var/log/payhook/handed-on.jsonl
dispatch_poll_ms = 100
stripe_api_key = $api_key
stripe_api_base = http://127.0.0.1:$api_port
EOF
# The secret for payhook-sign, readable by root only.
(umask 077 && echo "$secret" >"$root/root/stripe.secret")
expect "the conffile sets metrics_file in /var/lib/payhook" "/var/lib/payhook/metrics" \
	"$(sed -n 's/^metrics_file = //p' "$root/etc/payhook/payhook.conf")" ||
	# A conffile without it (an older package) gets it here, so that what
	# follows checks the units' sandboxes, not the conffile.
	echo 'metrics_file = /var/lib/payhook/metrics' >>"$root/etc/payhook/payhook.conf"
# README.Debian's check, as written, before any unit started.
check_line=$(grep -m 1 -- '--check-config' <<<"$readme" | sed 's/^ *//')
in_root sh -c "$check_line" >"$work/check.out" 2>&1
expect "README.Debian's check before the first start: $check_line" 0 "$?" ||
	sed 's/^/# /' "$work/check.out"

# ---- the programs, as README.Debian starts them -----------------------------
enable_line=$(grep -m 1 '^ *systemctl enable --now payhook' <<<"$readme" | sed 's/^ *//')
in_root sh -c "$enable_line" >"$work/enable.out" 2>&1
expect "README.Debian's $enable_line" 0 "$?" || sed 's/^/# /' "$work/enable.out"
for _ in $(seq 1 50); do
	[ "$(in_root systemctl is-active payhook-dispatch)" = active ] &&
		[ "$(in_root systemctl is-active payhook)" = active ] && break
	sleep 0.1
done
expect "payhook.socket, payhook and payhook-dispatch run" "active active active" \
	"$(in_root systemctl is-active payhook.socket payhook payhook-dispatch | tr '\n' ' ' | sed 's/ $//')" ||
	{ journal payhook; journal payhook-dispatch; }
expect "/run/payhook/payhook.sock: root:www-data 0660 (payhook.socket)" "root www-data 660" \
	"$(in_root stat -c '%U %G %a' /run/payhook/payhook.sock 2>&1)"
# The master and its workers: in the group payhook, not www-data.
main=$(in_root systemctl show -p MainPID --value payhook)
groups=$(in_root sh -c "for s in /proc/[0-9]*/status; do
	awk -v m=$main '/^Pid:/ { p = \$2 } /^PPid:/ { pp = \$2 }
		/^Groups:/ { sub(/^Groups:[ \t]*/, \"\"); sub(/[ \t]*\$/, \"\"); g = \$0 }
		END { if (p == m || pp == m) print g }' \"\$s\"
	done" 2>/dev/null)
payhook_gid=$(in_root getent group payhook | cut -d: -f3)
expect "payhook's master and $(($(wc -l <<<"$groups") - 1)) workers: in the group payhook alone" \
	"$payhook_gid" "$(sort -u <<<"$groups" | tr '\n' ' ' | sed 's/ $//')"

# ---- lighttpd and nginx, as README.Debian and the examples say -------------
in_root cp /usr/share/doc/payhook/examples/lighttpd-spawn-fcgi.conf \
	/etc/lighttpd/conf-available/50-payhook.conf
in_root lighty-enable-mod payhook >/dev/null 2>&1 || die "lighty-enable-mod payhook"
in_root systemctl reload lighttpd || journal lighttpd
in_root cp /usr/share/doc/payhook/examples/nginx.conf /etc/nginx/sites-available/payhook
in_root ln -s ../sites-available/payhook /etc/nginx/sites-enabled/payhook
# This run's port on 127.0.0.1 for the example's 443.
sed -i -e "s/^\(\s*\)listen 443 ssl;/\1listen 127.0.0.1:$tls_port ssl;/" \
	-e '/^\s*listen \[::\]:443 ssl;/d' "$root/etc/nginx/sites-available/payhook"
out=$(in_root nginx -t 2>&1)
expect "nginx -t with the package's example (snake-oil certificate)" 0 "$?" ||
	sed 's/^/# /' <<<"$out"
in_root systemctl reload-or-restart nginx || journal nginx
for _ in $(seq 1 100); do
	curl -s -o /dev/null "http://127.0.0.1:$web_port/" &&
		curl -sk -o /dev/null "https://127.0.0.1:$tls_port/" && break
	sleep 0.1
done

# deliver VIA TRANSACTION: a delivery of Stripe's payment_intent.succeeded
# for TRANSACTION, signed by the package's payhook-sign as Stripe signs,
# through lighttpd (VIA http) or nginx (https); prints "STATUS RESULT".
deliver() {
	local body=$in_dir/$2.json headers line url args=()
	in_root payhook-sign --provider stripe --sample payment_intent.succeeded \
		--transaction-id "$2" --amount 1999 --currency EUR >"$root$body"
	headers=$(in_root payhook-sign --provider stripe --secret-file /root/stripe.secret \
		"$body") || return
	while IFS= read -r line; do args+=(-H "$line"); done <<<"$headers"
	case $1 in
	http) url=http://127.0.0.1:$web_port/webhook/stripe ;;
	https) url=https://127.0.0.1:$tls_port/webhook/stripe ;;
	esac
	curl -ksS -o "$work/answer" -w '%{http_code}' -X POST \
		-H 'Content-Type: application/json' "${args[@]}" \
		--data-binary "@$root$body" "$url"
	printf ' %s\n' "$(sed -n 's/.*"result": *"\([a-z_]*\)".*/\1/p' "$work/answer")"
}
sql() { in_root mariadb -N -e "$1" payhook; }
rows() { sql "SELECT COUNT(*) FROM payments WHERE transaction_id LIKE 'pi_deb_%'"; }
# wait_for FILE PATTERN: up to 10 s for a line of the root's FILE.
wait_for() {
	for _ in $(seq 1 100); do
		grep -q "$2" "$root$1" 2>/dev/null && return 0
		sleep 0.1
	done
	return 1
}
expect "a signed delivery through lighttpd (www-data)" "200 processed" \
	"$(deliver http pi_deb_1)" || {
	journal payhook
	journal lighttpd
	tail -n 5 "$root/var/log/payhook/payhook.log" | sed 's/^/# log: /'
}
expect "its redelivery through nginx (www-data, TLS)" "200 duplicate" \
	"$(deliver https pi_deb_1)" || journal nginx
expect "another through nginx" "200 processed" "$(deliver https pi_deb_2)"
expect "rows in payments" 2 "$(rows)"
if wait_for /var/log/payhook/handed-on.jsonl pi_deb_2; then
	ok "payhook-dispatch handed the payments on (dispatch_command)"
else
	not_ok "payhook-dispatch did not hand pi_deb_2 on"
	journal payhook-dispatch
fi
expect "payhook logs to /var/log/payhook/payhook.log" yes \
	"$(grep -q 'transaction_id=pi_deb_1' "$root/var/log/payhook/payhook.log" && echo yes)"

# ---- one metrics_file for the units -----------------------------------------
expect "/var/lib/payhook/metrics: payhook:payhook 0640" "payhook:payhook 640" \
	"$(in_root stat -c '%U:%G %a' /var/lib/payhook/metrics 2>&1)"
stats=
for _ in $(seq 1 50); do
	stats=$(in_root runuser -u payhook -- payhook --stats -c /etc/payhook/payhook.conf 2>&1)
	grep -q '^payhook_dispatch_attempts_total{result="delivered"} [1-9]' <<<"$stats" && break
	sleep 0.2
done
expect "payhook --stats: the workers' counts in metrics_file" \
	'payhook_requests_total{provider="stripe",outcome="processed",status="200"} 2' \
	"$(grep '^payhook_requests_total{provider="stripe",outcome="processed"' <<<"$stats")"
expect "payhook --stats: payhook-dispatch's in the same file" yes \
	"$(grep -q '^payhook_dispatch_attempts_total{result="delivered"} [1-9]' <<<"$stats" && echo yes)" ||
	{ sed 's/^/# stats: /' <<<"$stats" | head -n 20; journal payhook-dispatch; }
expect "payhook-dispatch.service: running, never restarted" "active 0" \
	"$(in_root systemctl is-active payhook-dispatch) $(in_root systemctl show -p NRestarts --value payhook-dispatch)"

# ---- payhook-reconcile.service: a payment the webhook never brought -------
now=$(date +%s)
in_root payhook-sign --provider stripe --sample payment_intent.succeeded \
	--transaction-id pi_deb_missed --amount 2500 --currency EUR --event-id evt_deb_missed |
	sed "s/\"created\":[0-9]*/\"created\":$((now - 60))/" | tr -d '\n' >>"$work/events"
echo >>"$work/events"
in_root systemctl start payhook-reconcile.service
expect "systemctl start payhook-reconcile.service" "0 success" \
	"$? $(in_root systemctl show -p Result --value payhook-reconcile.service)" ||
	journal payhook-reconcile
expect "it recorded the payment the webhook never brought (source reconcile)" \
	"2500 reconcile" \
	"$(sql "SELECT CONCAT(amount, ' ', source) FROM payments WHERE transaction_id = 'pi_deb_missed'")"
expect "it asked the fake Stripe API" yes "$(grep -q '/v1/events' "$work/api.log" && echo yes)"
in_root systemctl enable --now payhook-reconcile.timer >/dev/null 2>&1
expect "payhook-reconcile.timer, enabled as README.Debian says" active \
	"$(in_root systemctl is-active payhook-reconcile.timer)"

# ---- the socket outlives payhook.service ------------------------------------
in_root systemctl stop payhook
expect "payhook stopped: payhook.socket still listens on /run/payhook/payhook.sock" \
	"inactive active yes" \
	"$(in_root systemctl is-active payhook) $(in_root systemctl is-active payhook.socket) $(yes_no test -S /run/payhook/payhook.sock)"
expect "a delivery then starts payhook (socket activation)" "200 processed" \
	"$(deliver http pi_deb_3)"
expect "payhook runs again" active "$(in_root systemctl is-active payhook)"

# ---- log rotation ---------------------------------------------------------
in_root logrotate -f /etc/logrotate.d/payhook >"$work/logrotate.out" 2>&1
expect "logrotate -f /etc/logrotate.d/payhook" 0 "$?" || sed 's/^/# /' "$work/logrotate.out"
if in_root test -f /var/log/payhook/payhook.log.1; then
	ok "payhook.log.1 is the old log"
else
	not_ok "no payhook.log.1 after the rotation"
fi
expect "the new payhook.log: payhook:payhook 0640" "payhook:payhook 640" \
	"$(in_root stat -c '%U:%G %a' /var/log/payhook/payhook.log 2>&1)"
# The programs look at the path again at most once a second.
sleep 1.2
expect "a delivery after the rotation" "200 processed" "$(deliver http pi_deb_4)"
if wait_for /var/log/payhook/payhook.log 'transaction_id=pi_deb_4'; then
	ok "payhook writes to the new log"
else
	not_ok "payhook's line about pi_deb_4 is not in the new log"
fi
if wait_for /var/log/payhook/handed-on.jsonl pi_deb_4 &&
	wait_for /var/log/payhook/payhook.log 'payhook-dispatch.*pi_deb_4'; then
	ok "payhook-dispatch writes to the new log"
else
	not_ok "payhook-dispatch's line about pi_deb_4 is not in the new log"
	tail -n 5 "$root/var/log/payhook/payhook.log" | sed 's/^/# log: /'
fi

# ---- upgrades ---------------------------------------------------------------
socket_before=$(in_root stat -c %i /run/payhook/payhook.sock)
main_before=$(in_root systemctl show -p MainPID --value payhook)
in_root apt-get install -y -qq "$deb2_in" >"$work/upgrade.log" 2>&1 </dev/null
expect "upgrade to $version-2: plain apt-get install, no terminal" 0 "$?" ||
	tail -n 20 "$work/upgrade.log" | sed 's/^/# /'
expect "upgraded version" "$version-2" "$(in_root dpkg-query -W -f '${Version}' payhook)"
expect "the admin's configuration survived" yes \
	"$(grep -q "^mysql_password = $db_password\$" "$root/etc/payhook/payhook.conf" && echo yes)"
expect "nothing beside it (the conffile did not change)" "no no" \
	"$(yes_no test -e /etc/payhook/payhook.conf.dpkg-dist) $(yes_no test -e /etc/payhook/payhook.conf.dpkg-old)"
expect "the new example is in /usr/share/doc/payhook/examples" yes \
	"$(yes_no grep -qx "$upgrade_mark" /usr/share/doc/payhook/examples/payhook.conf.example)"
expect "payhook restarted (another main PID), on the socket that stayed open" \
	"yes $socket_before active" \
	"$([ "$(in_root systemctl show -p MainPID --value payhook)" != "$main_before" ] && echo yes || echo no) $(in_root stat -c %i /run/payhook/payhook.sock 2>&1) $(in_root systemctl is-active payhook)"
expect "a delivery after the upgrade" "200 processed" "$(deliver https pi_deb_5)"

in_root apt-get install -y -qq -o Dpkg::Options::=--force-confold "$deb3_in" \
	>"$work/upgrade3.log" 2>&1 </dev/null
expect "upgrade to $version-3 (a changed conffile) with --force-confold, no question" 0 "$?" ||
	tail -n 20 "$work/upgrade3.log" | sed 's/^/# /'
expect "upgraded version" "$version-3" "$(in_root dpkg-query -W -f '${Version}' payhook)"
expect "the admin's configuration survived" yes \
	"$(grep -q "^mysql_password = $db_password\$" "$root/etc/payhook/payhook.conf" && echo yes)"
expect "the package's new conffile is beside it (payhook.conf.dpkg-dist)" yes \
	"$(grep -qx "$conf_mark" "$root/etc/payhook/payhook.conf.dpkg-dist" 2>/dev/null && echo yes)"
expect "after the upgrades: root:payhook 0640" "root:payhook 640" \
	"$(in_root stat -c '%U:%G %a' /etc/payhook/payhook.conf)"
expect "README.Debian's check after the upgrades" 0 \
	"$(in_root sh -c "$check_line" >/dev/null 2>&1; echo $?)"

# ---- remove, purge ---------------------------------------------------------
in_root apt-get remove -y -qq payhook >"$work/remove.log" 2>&1 </dev/null
expect "apt-get remove payhook" 0 "$?"
expect "remove: the programs are gone, the socket closed" "no no" \
	"$(yes_no test -e /usr/bin/payhook) $(yes_no test -e /run/payhook/payhook.sock)"
expect "remove: the configuration, the logs, the state and the user stay" "yes yes yes yes" \
	"$(yes_no test -f /etc/payhook/payhook.conf) $(yes_no test -f /var/log/payhook/payhook.log.1) $(yes_no test -f /var/lib/payhook/metrics) $(yes_no getent passwd payhook)"
expect "remove: the payments stay" 6 "$(rows)"
in_root apt-get purge -y -qq payhook >"$work/purge.log" 2>&1 </dev/null
expect "apt-get purge payhook" 0 "$?"
expect "purge: the configuration, the logs and /var/lib/payhook are gone" "no no no" \
	"$(yes_no test -e /etc/payhook) $(yes_no test -e /var/log/payhook) $(yes_no test -e /var/lib/payhook)"
expect "purge: the payhook user stays (Debian policy)" yes "$(yes_no getent passwd payhook)"
expect "purge: dpkg no longer knows payhook" "" \
	"$(in_root dpkg-query -W -f '${db:Status-Status}' payhook 2>/dev/null | grep -v not-installed)"

echo "check-deb: $(tap_passed) passed, $(tap_failed) failed"
[ "$(tap_failed)" -eq 0 ]
