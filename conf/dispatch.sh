#!/bin/sh
# dispatch.sh - starts @DISPATCHERS@ payhook-dispatch processes in the
# background, each handing recorded payments on to dispatch_url or
# dispatch_command, and writes their PIDs to a PID file, one per line (as
# spawn-fcgi does for the workers). For hosts without systemd; under systemd
# see conf/payhook-dispatch.service.
#
# For a real deployment replace (the tests fill these in with sed):
#   @PAYHOOK_DISPATCH@  /usr/local/bin/payhook-dispatch
#   @CONFIG@            /etc/payhook/payhook.conf (the same file as
#                       payhook's: the MySQL keys and the dispatch_* keys)
#   @DISPATCHERS@       2 (each delivers one payment at a time; they share
#                       the work safely through the database's claims, on
#                       one host or several)
#   @PIDFILE@           /run/payhook/payhook-dispatch.pid
#   @LOG@               /var/log/payhook/payhook-dispatch.log
#
# What to know:
# * The configuration is checked first (payhook-dispatch --check-config): a
#   dispatcher that cannot start would otherwise fail unseen in the
#   background. MySQL must be reachable for the check.
# * Stop them with: kill -TERM $(cat @PIDFILE@). Each finishes the attempt in
#   hand (at most dispatch_timeout_ms), gives back the payments it claimed
#   but did not attempt, and exits 0. Nothing is lost by a SIGKILL either:
#   what a killed dispatcher held comes due again after dispatch_lease_ms.
# * Nothing restarts a dispatcher that exits; a payment it held is then
#   taken by the others after its lease. One process with
#   dispatch_concurrency = N keeps N dispatchers running instead (and
#   restarts them), which is what the systemd unit does.
# * The dispatchers get this script's environment, so PAYHOOK_* variables
#   set here reach them (and win over the file).
set -eu

bin='@PAYHOOK_DISPATCH@'
config='@CONFIG@'
count='@DISPATCHERS@'
pidfile='@PIDFILE@'
log='@LOG@'

if ! "$bin" --check-config -c "$config" >/dev/null 2>&1; then
	echo "dispatch.sh: the configuration check failed:" >&2
	"$bin" --check-config -c "$config" >&2 || true
	exit 1
fi

# Written beside the PID file and renamed, so a reader never sees half.
tmp=$pidfile.new
: >"$tmp"
i=0
while [ "$i" -lt "$count" ]; do
	"$bin" -c "$config" </dev/null >>"$log" 2>&1 &
	echo "$!" >>"$tmp"
	i=$((i + 1))
done
mv -f "$tmp" "$pidfile"
echo "dispatch.sh: started $count dispatchers, PIDs in $pidfile"
