#!/bin/sh
# spawn-fcgi.sh - starts a pool of payhook FastCGI workers that share one
# unix socket; lighttpd (conf/lighttpd-spawn-fcgi.conf) or nginx
# (conf/nginx.conf) connects to that socket. Extra arguments are passed to
# payhook (e.g. --max-requests 3).
#
# For a real deployment replace (the tests fill these in with sed):
#   @SOCKET@   /run/payhook/payhook.sock (the web server must be able to
#              connect: as root, add -u payhook -U www-data -M 0600)
#   @WORKERS@  4 (about the number of CPU cores; each worker serves one
#              request at a time and holds one Redis and one MySQL connection)
#   @PIDFILE@  /run/payhook/payhook.pid (spawn-fcgi writes every worker's
#              PID there, one per line)
#   @PAYHOOK@  /usr/local/bin/payhook
#   @CONFIG@   /etc/payhook.conf
#   @LOG@      /var/log/payhook/payhook.log (writable by the workers' user)
#
# What to know about spawn-fcgi:
# * It binds the socket, forks the workers (-F) and exits; stop the pool by
#   sending SIGTERM to the PIDs in the PID file: each worker finishes the
#   request in hand and exits 0.
# * Nothing replaces a worker that exits (a crash, --max-requests, a signal):
#   the pool shrinks, and with no worker left lighttpd answers 503 and nginx
#   502 (the provider retries).
#   Under systemd see conf/payhook-spawn-fcgi.service.
# * The workers get spawn-fcgi's environment, so PAYHOOK_* variables set here
#   reach them.
# * It points the workers' standard output and error at /dev/null, where
#   payhook's log would be lost: the /bin/sh -c wrapper below appends it to a
#   file instead, and exec keeps the PID spawn-fcgi printed.
# * It prints "spawn-fcgi: child spawned successfully: PID: N" on standard
#   output for each worker, but notices a worker that fails only within its
#   first 0.1 s: run "payhook --check-config -c @CONFIG@" before it.
set -eu

# shellcheck disable=SC2016 # $0 and $@ are for the inner sh
exec spawn-fcgi -s '@SOCKET@' -F '@WORKERS@' -P '@PIDFILE@' -- \
	/bin/sh -c 'exec "$0" "$@" 2>>"@LOG@"' \
	'@PAYHOOK@' -c '@CONFIG@' "$@"
