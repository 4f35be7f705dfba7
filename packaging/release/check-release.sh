#!/bin/bash
# check-release.sh - "make check-release": the release tarball installed on a
# bare host, by its user, as INSTALL says, and then webhooks sent to it.
#
#   check-release.sh payhook-VERSION-linux-x86_64.tar.gz    (as root)
#
# The host is a fresh copy of a minimal Debian 12 root made by debian-root.sh
# (Apache with mod_fcgid, mod_cgid and suEXEC; a MariaDB server; none of
# payhook's libraries, no compiler), entered with chroot. This script plays
# two people:
#   - the host's admin, as root, once: Apache's configuration (the modules,
#     a virtual host whose document root is the user's ~/public_html, run as
#     that user by suEXEC, AllowOverride), the user's account, and a database
#     with its MySQL user, as a control panel makes them;
#   - the user, "alice", with no privilege: unpacks the tarball in her home,
#     loads the schema with the mariadb client, writes the configuration,
#     the wrappers and the .htaccess files, runs payhook --check-config.
# Then, as a provider would, it posts signed webhooks (signed by the
# release's own payhook-sign) through mod_fcgid and through plain CGI; runs
# the crontab line of INSTALL (payhook-dispatch --once), which hands the
# payments on to a merchant's CGI program on her site, and hands one on
# again over HTTPS (the certificate checked against SSL_CERT_FILE, then the
# host's CA store); sends an alert as the pool does (payhook-dispatch
# --send-alert); runs the crontab line through an outage of the merchant's
# site (none dead, each run mailed); runs INSTALL's payhook-reconcile line
# against a fake of Stripe's API on this machine (tests/servers/
# provider_api); and measures requests per second of each way with wrk,
# when wrk is installed.
#
# Apache and MariaDB listen on 127.0.0.1, on ports chosen at run time, and are
# stopped by PID at the end; /proc is unmounted and the copy removed.
# Prints TAP (tests/lib/tap.sh): "ok - ..." / "not ok - ..." per check, the
# plan at exit; exits 0 only if all pass.
set -uo pipefail

tarball=${1:?usage: check-release.sh TARBALL}
here=$(cd "$(dirname "$0")" && pwd)
freeport=${BUILD_DIR:-.}/tools/freeport
name=$(basename "$tarball" .tar.gz)
user=alice
db=alice_payhook
db_password=Alice-DB-pw-$$
stripe_secret=whsec_release_test_$$
# ok, not_ok, expect WHAT EXPECTED ACTUAL: the TAP lines of the tests.
# shellcheck source=../../tests/lib/tap.sh
. "${SRC_DIR:-$here/../..}/tests/lib/tap.sh"
die() { not_ok "$*"; exit 1; }

[ "$(id -u)" -eq 0 ] || die "check-release needs root (debootstrap, chroot, mount)"
[ -x "$freeport" ] || die "no $freeport: run it through make check-release"

# suexec-custom, because a shared host runs each user's programs as that
# user from a document root under /home (Debian's "pristine" suEXEC allows
# only /var/www).
# ca-certificates: every real host has the CA store.
root_tar=$(bash "$here/debian-root.sh" bookworm "apache2 libapache2-mod-fcgid
	apache2-suexec-custom mariadb-server mariadb-client ca-certificates") ||
	die "could not build the bare Debian root"
root=$(mktemp -d "${TMPDIR:-/var/tmp}/payhook-bare.XXXXXX")
# Everyone must be able to enter the root's /, www-data included.
chmod 755 "$root"
apache_pid='' mysql_pid='' api_pid=''

# Stops what this run started inside the root, by PID: Apache (which stops
# its mod_fcgid and CGI children), MariaDB, and then whatever is left with
# its root in the copy. The copy is removed only once /proc is unmounted.
# shellcheck source=root-stop.sh
. "$here/root-stop.sh"
cleanup() {
	# shellcheck disable=SC2086 # the PIDs, none when not started
	root_stop "$root" check-release $apache_pid $mysql_pid $api_pid
}
tap_cleanup cleanup

tar -C "$root" -xf "$root_tar" || die "unpack the bare root"
mount -t proc proc "$root/proc" || die "mount /proc in the root"

# ---- what the bare host does not have -----------------------------------
# Commands of the host's admin, with none of this machine's environment.
in_root() { chroot "$root" env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin HOME=/root "$@"; }
has=''
for pkg in libfcgi0ldbl libhiredis0.14 libjson-c5 gcc; do
	# shellcheck disable=SC2016 # dpkg-query's own ${field} syntax
	if in_root dpkg-query -W -f '${Status}' "$pkg" 2>/dev/null | grep -q 'ok installed'; then
		has="$has $pkg"
	fi
done
if in_root sh -c 'command -v cc || command -v gcc' >/dev/null; then
	has="$has cc"
fi
expect "bare host: none of payhook's libraries, no compiler" "" "$has"

# ---- the admin, once -----------------------------------------------------
web_port=$("$freeport") || die "a free port"
tls_port=$("$freeport") || die "a free port"
mysql_port=$("$freeport") || die "a free port"

in_root useradd -m -s /bin/sh "$user" || die "useradd"
# Apache (www-data) must pass through the home to reach public_html.
in_root chmod 711 "/home/$user"
in_root install -d -o "$user" -g "$user" -m 755 "/home/$user/public_html"

in_root install -d -o mysql -g mysql /run/mysqld
in_root /usr/sbin/mariadbd --user=mysql --bind-address=127.0.0.1 \
	--port="$mysql_port" --socket=/run/mysqld/mysqld.sock \
	--log-error=/var/log/mysql/error.log >/dev/null 2>&1 &
mysql_pid=$!
for _ in $(seq 1 100); do
	in_root mariadb-admin --socket=/run/mysqld/mysqld.sock ping >/dev/null 2>&1 && break
	sleep 0.2
done
# What a control panel does: a database, and a user with every right on it.
in_root mariadb --socket=/run/mysqld/mysqld.sock -e "
	CREATE DATABASE $db;
	CREATE USER '$db'@'localhost' IDENTIFIED BY '$db_password';
	CREATE USER '$db'@'127.0.0.1' IDENTIFIED BY '$db_password';
	GRANT ALL PRIVILEGES ON $db.* TO '$db'@'localhost';
	GRANT ALL PRIVILEGES ON $db.* TO '$db'@'127.0.0.1';" ||
	die "MariaDB: create the database and the user"
# A second login of hers through ed25519, an authentication plugin that
# MariaDB Connector/C loads from a file at run time unless it was built in,
# as release.sh builds it (with MySQL 8's caching_sha2_password).
in_root mariadb --socket=/run/mysqld/mysqld.sock -e "
	INSTALL SONAME 'auth_ed25519';
	CREATE USER '${db}_ed'@'127.0.0.1' IDENTIFIED VIA ed25519 USING PASSWORD('$db_password');
	GRANT ALL PRIVILEGES ON $db.* TO '${db}_ed'@'127.0.0.1';" ||
	die "MariaDB: create the ed25519 user"

# suexec-custom's first line is the root that user programs must be under.
printf '/home\npublic_html\n' >"$root/etc/apache2/suexec/www-data"
printf 'Listen 127.0.0.1:%s\nListen 127.0.0.1:%s\n' "$web_port" "$tls_port" \
	>"$root/etc/apache2/ports.conf"
# The site's HTTPS certificate, for 127.0.0.1, from a CA of its own that the
# host does not trust yet: the hand-off's checks below add it.
in_root openssl req -x509 -newkey rsa:2048 -nodes -days 2 -subj /CN=127.0.0.1 \
	-addext subjectAltName=IP:127.0.0.1 -keyout /etc/ssl/private/site.key \
	-out /etc/ssl/site.crt >/dev/null 2>&1 || die "openssl: the site's certificate"
site="    ServerName $user.example
    DocumentRoot /home/$user/public_html
    SuexecUserGroup $user $user
    <Directory /home/$user/public_html>
        AllowOverride FileInfo Options=ExecCGI
        Options SymLinksIfOwnerMatch
        Require all granted
    </Directory>"
cat >"$root/etc/apache2/sites-available/$user.conf" <<EOF
# The user's site, as a shared host's panel writes it: her document root,
# her programs run as her (suEXEC), .htaccess may set handlers, rewrites and
# ExecCGI; over HTTP and HTTPS.
<VirtualHost 127.0.0.1:$web_port>
$site
</VirtualHost>
<VirtualHost 127.0.0.1:$tls_port>
$site
    SSLEngine on
    SSLCertificateFile /etc/ssl/site.crt
    SSLCertificateKeyFile /etc/ssl/private/site.key
</VirtualHost>
EOF
echo "ServerName localhost" >"$root/etc/apache2/conf-available/servername.conf"
in_root sh -c "a2dissite -q 000-default && a2ensite -q $user && a2enconf -q servername &&
	a2enmod -q fcgid rewrite cgid suexec ssl" >/dev/null || die "Apache: enable the modules and the site"
in_root apache2ctl start || die "Apache: start"
# apache2ctl returns before the daemon has written its PID.
for _ in $(seq 1 50); do
	apache_pid=$(cat "$root/run/apache2/apache2.pid" 2>/dev/null) && break
	sleep 0.1
done
[ -n "$apache_pid" ] || die "Apache: no PID file"

# ---- the user ------------------------------------------------------------
# She uploads the tarball (FTP or scp), then over SSH types what INSTALL says.
install -o "$(in_root id -u "$user")" -g "$(in_root id -g "$user")" -m 644 \
	"$tarball" "$root/home/$user/"
as_user() {
	chroot --userspec="$user:$user" "$root" env -i HOME="/home/$user" \
		USER="$user" PATH=/usr/bin:/bin sh -c "umask 022 && cd && $1"
}
user_steps="set -e
tar xzf $name.tar.gz
mv $name payhook
cd payhook
sha256sum -c --quiet SHA256SUMS
# The table, with the host's MySQL client, as the control panel's user.
mariadb -h 127.0.0.1 -P $mysql_port -u $db -p'$db_password' $db < db/schema.sql
# The configuration, from the shared-hosting example, and her home in it and
# in the wrappers; then the values she sets in an editor.
cp conf/shared-hosting.conf.example payhook.conf
chmod 600 payhook.conf
sed -i \"s|/home/USER|\$HOME|g\" payhook.conf payhook.fcgi payhook.cgi
sed -i -e 's/^mysql_database = .*/mysql_database = $db/' \
	-e 's/^mysql_user = .*/mysql_user = $db/' \
	-e 's/^mysql_password = .*/mysql_password = $db_password/' \
	-e 's/^mysql_port = .*/mysql_port = $mysql_port/' \
	-e 's/^stripe_secret = .*/stripe_secret = $stripe_secret/' payhook.conf
# FastCGI in public_html, plain CGI in public_html/cgi (a host has one or
# the other; this one has both).
cp payhook.fcgi ~/public_html/
cp conf/htaccess.example ~/public_html/.htaccess
mkdir ~/public_html/cgi
cp payhook.cgi ~/public_html/cgi/
cp conf/htaccess-cgi.example ~/public_html/cgi/.htaccess
"
if out=$(as_user "$user_steps" 2>&1); then
	ok "user: unpacked, checksums, schema loaded, configured, installed"
else
	printf '%s\n' "$out" >&2
	die "user: the INSTALL steps failed"
fi

if out=$(as_user "payhook/payhook --check-config -c payhook/payhook.conf" 2>&1) &&
	! grep -qiE 'fail|warn' <<<"$out"; then
	ok "user: payhook --check-config passes"
else
	not_ok "user: payhook --check-config: $out"
fi
printf '%s\n' "$out" | sed 's/^/# /'
if out=$(as_user "PAYHOOK_MYSQL_USER=${db}_ed payhook/payhook --check-config -c payhook/payhook.conf" 2>&1); then
	ok "user: payhook logs in through ed25519 (built in)"
else
	not_ok "user: payhook through ed25519: $out"
fi
# On the host itself: every library they load is found, and part of glibc.
# A program ldd cannot read fails the check.
for prog in payhook payhook-dispatch; do
	if ! others=$(in_root ldd "/home/$user/payhook/$prog" 2>&1); then
		others="ldd failed: $others"
	else
		others=$(awk '{ print $1, $3 }' <<<"$others" |
			grep -vE '^(linux-vdso\.so\.1|/lib64/ld-linux-x86-64\.so\.2|(libc|libdl|libpthread|libm)\.so\.[0-9]+ /)')
	fi
	expect "$prog loads only the C library" "" "$others"
done

# ---- a provider's deliveries ---------------------------------------------
# The secret reaches payhook-sign in a file, as INSTALL says: taken from
# payhook.conf, never on a command line (ps, the shell's history).
as_user "(umask 077 && sed -n 's/^stripe_secret *= *//p' payhook/payhook.conf >stripe.secret)" ||
	die "user: could not write stripe.secret"
as_user "(umask 077 && echo whsec_not_the_secret >wrong.secret)" ||
	die "user: could not write wrong.secret"
# post URL EVENT SECRET_FILE: a Stripe delivery, its headers made by the
# release's payhook-sign run by the user on the bare host, sent by curl from
# outside it; prints "STATUS BODY".
post() {
	local url=$1 event=$2 secret_file=$3 args=() line
	while IFS= read -r line; do
		args+=(-H "$line")
	done < <(as_user "payhook/payhook-sign --provider stripe --secret-file $secret_file $event")
	curl -sS -o "$root/tmp/answer" -w '%{http_code}' -X POST \
		-H 'Content-Type: application/json' "${args[@]}" \
		--data-binary "@$root/home/$user/$event" "$url"
	printf ' %s' "$(cat "$root/tmp/answer")"
}
# expect_answer WHAT "STATUS OUTCOME" ANSWER
expect_answer() {
	local status=${2% *} outcome=${2#* }
	if [ "${3%% *}" = "$status" ] && grep -q "\"result\": *\"$outcome\"" <<<"${3#* }"; then
		ok "$1: $2"
	else
		not_ok "$1: expected $2, got $3"
	fi
}
base=http://127.0.0.1:$web_port
for way in fcgid:/webhook/stripe cgi:/cgi/webhook/stripe; do
	how=${way%%:*} url=$base${way#*:}
	as_user "payhook/payhook-sign --provider stripe --sample payment_intent.succeeded \
		--transaction-id pi_release_$how --amount 1999 --currency usd >event-$how.json"
	expect_answer "$how: a signed delivery" "200 processed" "$(post "$url" "event-$how.json" stripe.secret)"
	expect_answer "$how: its redelivery" "200 duplicate" "$(post "$url" "event-$how.json" stripe.secret)"
	expect_answer "$how: a bad signature" "401 unauthorized" "$(post "$url" "event-$how.json" wrong.secret)"
done
rows=$(as_user "mariadb -h 127.0.0.1 -P $mysql_port -u $db -p'$db_password' -N -e 'SELECT COUNT(*) FROM payments' $db")
expect "rows in payments" 2 "$rows"
# suEXEC ran payhook as the user: the log file it created is hers.
owner=$(stat -c %u "$root/home/$user/payhook/payhook.log" 2>/dev/null)
expect "payhook ran as $user (suEXEC): the uid of its log file" \
	"$(in_root id -u "$user")" "$owner"

# mod_fcgid keeps its process for the next request; plain CGI starts one per
# request (the PIDs in the log lines of each transaction say which).
pids() {
	grep "transaction_id=pi_release_$1 " "$root/home/$user/payhook/payhook.log" |
		sed -n 's/.* payhook\[\([0-9]*\)\].*/\1/p' | sort -u | wc -l
}
expect "fcgid: processes that served two deliveries (one, kept)" 1 "$(pids fcgid)"
expect "cgi: processes that served two deliveries (one each)" 2 "$(pids cgi)"

# ---- the hand-off: payhook-dispatch from cron ----------------------------
# The merchant's fulfilment is a CGI program on her own site (a shop's PHP
# would stand there): it keeps each POST's Idempotency-Key, after "on" when
# it came over HTTPS, and its body, and answers 200.
sql() { in_root mariadb --socket=/run/mysqld/mysqld.sock -N -e "$1" "$db"; }
home=$root/home/$user
fulfil=merchant/fulfil.cgi
mkdir -p "$home/merchant" "$home/public_html/merchant"
printf 'AddHandler cgi-script .cgi\nOptions +ExecCGI\n' >"$home/public_html/merchant/.htaccess"
cat >"$home/public_html/$fulfil" <<'EOF'
#!/bin/sh
# Down for maintenance while the file "down" exists (the outage below).
if [ -e KEPT/down ]; then
	head -c "${CONTENT_LENGTH:-0}" >/dev/null
	printf 'Status: 503 Service Unavailable\r\nContent-Type: text/plain\r\n\r\ndown\n'
	exit 0
fi
printf '%s %s\n' "${HTTPS:-off}" "$HTTP_IDEMPOTENCY_KEY" >>KEPT/keys
head -c "${CONTENT_LENGTH:-0}" >>KEPT/bodies
echo >>KEPT/bodies
printf 'Content-Type: application/json\r\n\r\n{"received": true}\n'
EOF
sed -i "s|KEPT|/home/$user/merchant|" "$home/public_html/$fulfil"
chmod 755 "$home/merchant" "$home/public_html/merchant" "$home/public_html/$fulfil"
chmod 644 "$home/public_html/merchant/.htaccess"
in_root chown -R "$user:$user" "/home/$user/merchant" "/home/$user/public_html/merchant" ||
	die "chown the merchant's files"

# She sets the target and the alert where payhook.conf (the example) has
# them commented out, and types INSTALL's crontab line. An alert_command
# that appends the alert to a file stands for mail.
as_user "sed -i -e 's|^# *dispatch_url = .*|dispatch_url = http://127.0.0.1:$web_port/$fulfil|' \
	-e 's|^# *alert_command = .*|alert_command = cat >>/home/$user/alerts.json|' \
	payhook/payhook.conf" || die "user: could not set dispatch_url and alert_command"
expect "user: the example's dispatch_url and alert_command set" 2 \
	"$(grep -cE '^(dispatch_url = http|alert_command = cat)' "$home/payhook/payhook.conf")"
if out=$(as_user "payhook/payhook-dispatch --check-config -c payhook/payhook.conf" 2>&1) &&
	! grep -q FAILED <<<"$out"; then
	ok "user: payhook-dispatch --check-config passes"
else
	not_ok "user: payhook-dispatch --check-config: $out"
fi
printf '%s\n' "$out" | sed 's/^/# /'
# The hand-off's line (INSTALL's other every-minute line is the fetcher's
# of the providers that only notify, for those who use them).
cron=$(sed -n 's/^ *\* \* \* \* \* \(.*payhook-dispatch .*\)/\1/p' "$home/payhook/INSTALL")
expect "INSTALL: one crontab line for payhook-dispatch" 1 "$(grep -c . <<<"$cron")"
echo "# cron: $cron"
as_user "$cron"
expect "cron: payhook-dispatch --once: exit status" 0 "$?"
expect "cron: every payment delivered (dispatch_state)" \
	"pi_release_cgi delivered|pi_release_fcgid delivered" \
	"$(sql "SELECT CONCAT(transaction_id, ' ', dispatch_state) FROM payments
		ORDER BY transaction_id" | paste -sd '|')"
expect "merchant: each handed on once, keyed payhook:<provider>:<transaction_id>" \
	"off payhook:stripe:pi_release_cgi|off payhook:stripe:pi_release_fcgid" \
	"$(sort "$home/merchant/keys" 2>&1 | paste -sd '|')"
expect "merchant: bodies with the amount" 2 \
	"$(grep -c '"amount": *1999' "$home/merchant/bodies" 2>&1)"

# HTTPS through the release's own OpenSSL, which has no CA bundle built in:
# one payment handed on again (the same key) to the site's HTTPS, whose CA
# the host does not trust (refused); with SSL_CERT_FILE naming the CA (what
# a RHEL-like host needs: its bundle is not where OpenSSL looks by
# default); then, the CA in the host's store (update-ca-certificates,
# Debian's /etc/ssl/certs), with no variable.
id=$(sql "SELECT id FROM payments WHERE transaction_id = 'pi_release_fcgid'")
# https_once RUNS VARIABLES: runs payhook-dispatch --once against the HTTPS
# site until payment $id is delivered, RUNS times at most (a failed attempt
# waits out its back-off, about 1 s); prints "STATE: LAST ERROR".
https_once() {
	local state i
	for i in $(seq 1 "$1"); do
		[ "$i" -gt 1 ] && sleep 0.5
		as_user "$2 PAYHOOK_DISPATCH_URL=https://127.0.0.1:$tls_port/$fulfil \
			payhook/payhook-dispatch --once=20 -c payhook/payhook.conf" >/dev/null 2>&1
		state=$(sql "SELECT CONCAT(dispatch_state, ': ', COALESCE(dispatch_last_error, ''))
			FROM payments WHERE id = $id")
		[ "${state%%:*}" = delivered ] && break
	done
	echo "$state"
}
# expect_delivered WHAT "STATE: LAST ERROR"
expect_delivered() {
	if [ "${2%%:*}" = delivered ]; then
		ok "$1"
	else
		not_ok "$1: expected delivered, got $2"
	fi
}
redeliver() {
	as_user "payhook/payhook-dispatch -c payhook/payhook.conf --redeliver $id" >/dev/null ||
		not_ok "--redeliver $id failed"
}
redeliver
state=$(https_once 1 "")
if [[ $state == pending:*certificate* ]]; then
	ok "https: refused while the site's CA is unknown ($state)"
else
	not_ok "https: the site's CA unknown: expected pending with a certificate error, got $state"
fi
expect_delivered "https: delivered with SSL_CERT_FILE naming the CA" \
	"$(https_once 8 "SSL_CERT_FILE=/etc/ssl/site.crt")"
cp "$root/etc/ssl/site.crt" "$root/usr/local/share/ca-certificates/payhook-site.crt"
in_root update-ca-certificates >/dev/null 2>&1 || not_ok "update-ca-certificates failed"
redeliver
expect_delivered "https: delivered with the CA in the host's store" "$(https_once 8 "")"
expect "merchant: the HTTPS deliveries, with the same key" \
	"on payhook:stripe:pi_release_fcgid|on payhook:stripe:pi_release_fcgid" \
	"$(grep '^on ' "$home/merchant/keys" 2>&1 | paste -sd '|')"

# The pool's alerts: payhook --workers runs the payhook-dispatch beside it
# (--check-config says where), as here.
out=$(as_user "payhook/payhook --check-config -c payhook/payhook.conf" 2>&1)
expect "pool: its alerts sent by the payhook-dispatch beside payhook" \
	"alert: ok (payhook --workers sends its alerts with /home/$user/payhook/payhook-dispatch)" \
	"$(grep '^alert:' <<<"$out")"
as_user "payhook/payhook-dispatch -c payhook/payhook.conf --send-alert --from payhook \
	release_check 'a test alert from check-release' 'nothing to do'"
expect "--send-alert: exit status" 0 "$?"
expect "alert_command: the alert, as the pool sends it" \
	'"event":"release_check" "program":"payhook"' \
	"$(grep -oE '"(event|program)": *"[a-z_-]*"' "$home/alerts.json" 2>&1 | tr -d ' ' | paste -sd ' ')"

# ---- the hand-off through an outage, from cron ---------------------------
# The merchant's site answers 503 for a while. INSTALL's crontab line runs
# every minute meanwhile (here: a second apart, with a short back-off so
# that each payment comes due again): the target's state is shared by the
# runs, so none of them makes a payment dead, and each run exits 3, which
# the line's "|| tail" turns into the output cron mails. Then the site is
# back: the runs deliver everything and say nothing. A run of the line
# keeps trying for up to 50 s; here each is cut to 3 s (--once=3), with
# attempts of 1 s at most (a run starts none that could outlast it).
for i in 1 2 3; do
	as_user "payhook/payhook-sign --provider stripe --sample payment_intent.succeeded \
		--transaction-id pi_release_outage_$i --amount 2500 --currency usd >outage-$i.json"
	expect_answer "outage: payment $i" "200 processed" \
		"$(post "$base/webhook/stripe" "outage-$i.json" stripe.secret)"
done
touch "$home/merchant/down"
cron_once=${cron/--once=50/--once=3}
[ "$cron_once" != "$cron" ] || not_ok "outage: INSTALL's line has no --once=50 to cut to 3 s"
outage_env="PAYHOOK_DISPATCH_MAX_ATTEMPTS=3 PAYHOOK_DISPATCH_CIRCUIT_FAILURES=2 \
PAYHOOK_DISPATCH_BACKOFF_MS=200 PAYHOOK_DISPATCH_BACKOFF_MAX_MS=500 PAYHOOK_DISPATCH_TIMEOUT_MS=1000"
mailed=0
for i in 1 2 3 4 5 6; do
	[ "$i" -gt 1 ] && sleep 1
	out=$(as_user "$outage_env $cron_once" 2>&1)
	grep -q '^payhook-dispatch --once: delivered 0, .*dead 0' <<<"$out" &&
		mailed=$((mailed + 1))
done
expect "outage: each of 6 cron runs mailed its last line (delivered 0, dead 0)" 6 "$mailed"
as_user "$outage_env ${cron_once%% || *}"
expect "outage: payhook-dispatch --once exits 3 while the target fails" 3 "$?"
expect "outage: no payment dead, the three still pending" "0 3" \
	"$(sql "SELECT CONCAT(SUM(dispatch_state = 'dead'), ' ',
		SUM(dispatch_state = 'pending')) FROM payments")"
expect "outage: the merchant got none of them" 0 \
	"$(grep -c 'pi_release_outage' "$home/merchant/keys")"
rm -f "$home/merchant/down"
mail=''
for i in 1 2 3 4 5 6 7 8 9 10; do
	mail=$mail$(as_user "$outage_env $cron_once" 2>&1)
	[ "$(sql "SELECT COUNT(*) FROM payments WHERE dispatch_state = 'delivered'
		AND transaction_id LIKE 'pi_release_outage_%'")" = 3 ] && break
	sleep 1
done
expect "outage: the site back, the cron runs delivered the three" 3 \
	"$(sql "SELECT COUNT(*) FROM payments WHERE dispatch_state = 'delivered'
		AND transaction_id LIKE 'pi_release_outage_%'")"
expect "outage: and mailed nothing" "" "$mail"
expect "outage: each handed on once" 3 \
	"$(grep -c 'payhook:stripe:pi_release_outage_' "$home/merchant/keys")"
expect "outage: one circuit_open and one circuit_closed alert" "circuit_closed circuit_open" \
	"$(grep -oE '"event": *"circuit_[a-z]*"' "$home/alerts.json" |
		sed 's/.*"\(circuit_[a-z]*\)"/\1/' | sort | paste -sd ' ')"

# ---- payhook-reconcile from cron, against a fake of Stripe's API --------
# The fake (tests/servers/provider_api, built beside this script's tree)
# runs on this machine on loopback, which the root shares; it lists
# Stripe's events as the API does, built from the fixture (a documented
# shape): three payments payhook never received, and one it holds.
api=${BUILD_DIR:-.}/tests/servers/provider_api
fixture=${SRC_DIR:-$here/../..}/tests/fixtures/providers/stripe/payment.json
api_key=rk_release_$$
now=$(date +%s)
stripe_event() {
	jq -c --arg pi "$1" --argjson amount "$2" --argjson created "$3" \
		'.id = "evt_" + $pi | .data.object.id = $pi |
		.data.object.amount = $amount | .data.object.amount_received = $amount |
		.data.object.currency = "usd" | .created = $created' "$fixture"
}
{
	stripe_event pi_release_fcgid 1999 $((now - 900))
	for i in 1 2 3; do
		stripe_event "pi_release_lost_$i" $((3000 + i)) $((now - 600 + i))
	done
} >"$root/tmp/api-events" || die "jq: the fake API's events"
"$api" --mode stripe --key "$api_key" --events "$root/tmp/api-events" \
	--faults "$root/tmp/api-faults" --log "$root/tmp/api.log" >"$root/tmp/api.port" &
api_pid=$!
for _ in $(seq 1 50); do
	read -r api_port <"$root/tmp/api.port" 2>/dev/null && break
	sleep 0.1
done
[ -n "${api_port:-}" ] || die "the fake provider API did not start"
# She adds the key (and here, the fake's address) and INSTALL's line.
as_user "printf 'stripe_api_key = $api_key\nstripe_api_base = http://127.0.0.1:$api_port\n' \
	>>payhook/payhook.conf" || die "user: could not set stripe_api_key"
recon=$(sed -n 's/^ *\*\/15 \* \* \* \* //p' "$home/payhook/INSTALL")
expect "INSTALL: one crontab line for payhook-reconcile" 1 "$(grep -c . <<<"$recon")"
echo "# cron: $recon"
expect "reconcile: the first run mails nothing" "" "$(as_user "$recon" 2>&1)"
line=$(tail -n 1 "$home/payhook/payhook-reconcile.log")
if grep -qE '^provider=stripe status=complete listed=4 processed=3 duplicate=1 .*discrepancy=0' <<<"$line"; then
	ok "reconcile: one pass recorded the three, found the one held ($line)"
else
	not_ok "reconcile: expected provider=stripe status=complete listed=4 processed=3 duplicate=1, got: $line"
fi
expect "reconcile: the three rows, source reconcile" \
	"pi_release_lost_1 3001 reconcile|pi_release_lost_2 3002 reconcile|pi_release_lost_3 3003 reconcile" \
	"$(sql "SELECT CONCAT_WS(' ', transaction_id, amount, source) FROM payments
		WHERE transaction_id LIKE 'pi_release_lost_%' ORDER BY transaction_id" | paste -sd '|')"
expect "reconcile: a second run records nothing" "" "$(as_user "$recon" 2>&1)"
has_line=$(tail -n 1 "$home/payhook/payhook-reconcile.log")
if grep -qE '^provider=stripe status=complete .*processed=0 ' <<<"$has_line"; then
	ok "reconcile: the second pass: processed=0"
else
	not_ok "reconcile: the second pass: $has_line"
fi
expect "reconcile: still one row each" 3 \
	"$(sql "SELECT COUNT(*) FROM payments WHERE transaction_id LIKE 'pi_release_lost_%'")"
# A key revoked at Stripe: the pass fails, cron mails its line.
echo "401 0 0" >"$root/tmp/api-faults"
out=$(as_user "$recon" 2>&1)
if grep -qE '^provider=stripe status=failed' <<<"$out"; then
	ok "reconcile: a refused key: the run mails the failed pass"
else
	not_ok "reconcile: a refused key: expected a mailed status=failed line, got: $out"
fi
as_user "${recon%% || *}"
expect "reconcile: payhook-reconcile --once exits 1 then" 1 "$?"
rm -f "$root/tmp/api-faults"
if grep -q "$api_key" "$home/payhook/payhook-reconcile.log" "$home/payhook/payhook.log"; then
	not_ok "reconcile: the API key is in a log"
else
	ok "reconcile: the API key is in no log"
fi

# ---- requests per second: mod_fcgid against plain CGI --------------------
# A signed redelivery, again and again: each request checks the signature,
# tries the INSERT and finds the row (duplicate). 4 connections, 5 s each
# after 2 s of warm-up.
if command -v wrk >/dev/null; then
	lua=$root/tmp/redeliver.lua
	{
		echo 'wrk.method = "POST"'
		echo 'wrk.headers["Content-Type"] = "application/json"'
		as_user "payhook/payhook-sign --provider stripe --secret-file stripe.secret event-fcgid.json" |
			sed 's/^\([^:]*\): \(.*\)$/wrk.headers["\1"] = "\2"/'
		# The body byte for byte, as it was signed.
		printf 'local f = io.open("%s", "rb")\n' "$root/home/$user/event-fcgid.json"
		echo 'wrk.body = f:read("*a"); f:close()'
		# The first answer that is not a 200, to say why in the log.
		echo 'response = function(status, headers, body)'
		echo '  if status ~= 200 and not told then told = true; print(status, body) end'
		echo 'end'
	} >"$lua"
	for way in fcgid:/webhook/stripe cgi:/cgi/webhook/stripe; do
		# mod_fcgid starts its processes as the load comes: 2 s to warm up.
		wrk -t 2 -c 4 -d 2s -s "$lua" "$base${way#*:}" >/dev/null 2>&1
		out=$(wrk -t 2 -c 4 -d 5s -s "$lua" "$base${way#*:}" 2>&1)
		rps=$(awk '/^Requests\/sec/ { printf "%d", $2 }' <<<"$out")
		if grep -q 'Non-2xx' <<<"$out" || [ -z "$rps" ]; then
			not_ok "${way%%:*}: answers other than 200 under load: $out"
		else
			ok "${way%%:*}: $rps requests/s (signed redeliveries, 4 connections)"
		fi
	done
else
	echo "# no wrk: requests per second not measured"
fi

echo "check-release: $(tap_passed) passed, $(tap_failed) failed"
[ "$(tap_failed)" -eq 0 ]
