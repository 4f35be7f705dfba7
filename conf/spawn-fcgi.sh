#!/bin/sh
# spawn-fcgi.sh - starts a payhook pool on one unix socket: spawn-fcgi binds
# the socket and starts one payhook master (--workers), which keeps that many
# workers on it. lighttpd (conf/lighttpd-spawn-fcgi.conf) or nginx
# (conf/nginx.conf) connects to that socket. Extra arguments are passed to
# payhook (e.g. --max-requests 1000).
#
# For a real deployment replace (the tests fill these in with sed):
#   @SOCKET@   /run/payhook/payhook.sock (the web server must be able to
#              connect: as root, add -u payhook -U www-data -M 0600)
#   @WORKERS@  4 (about the number of CPU cores; each worker serves one
#              request at a time and holds one Redis and one MySQL connection)
#   @PIDFILE@  /run/payhook/payhook.pid (the master's PID)
#   @PAYHOOK@  /usr/local/bin/payhook
#   @CONFIG@   /etc/payhook/payhook.conf
#   @LOG@      /var/log/payhook/payhook.log (writable by the workers' user)
#
# What to know:
# * spawn-fcgi binds the socket, starts the master on it (descriptor 0) and
#   exits. The master forks the workers and replaces any that exits or is
#   killed. Signals go to the master's PID (the PID file):
#     SIGHUP   re-read @CONFIG@ and start new workers; the old ones leave
#              (finishing the request in hand) once every new one started.
#              A file that does not load, or that a worker refuses,
#              changes nothing (the log says why)
#     SIGUSR2  re-execute @PAYHOOK@ (after an upgrade), same PID and socket
#     SIGTERM  stop: every worker finishes the request in hand, then exits
# * The workers get spawn-fcgi's environment, so PAYHOOK_* variables set here
#   reach them.
# * spawn-fcgi points payhook's standard output and error at /dev/null, where
#   its log would be lost: the /bin/sh -c wrapper below appends it to a file
#   instead (or set log_file, or log_target = syslog), and exec keeps the PID
#   spawn-fcgi printed.
# * Run "payhook --check-config -c @CONFIG@" first: spawn-fcgi notices a
#   master that fails only within its first 0.1 s.
set -eu

# shellcheck disable=SC2016 # $0 and $@ are for the inner sh
exec spawn-fcgi -s '@SOCKET@' -F 1 -P '@PIDFILE@' -- \
	/bin/sh -c 'exec "$0" "$@" 2>>"@LOG@"' \
	'@PAYHOOK@' --workers '@WORKERS@' -c '@CONFIG@' "$@"
