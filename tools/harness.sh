# shellcheck shell=bash
# harness.sh - the local server harness: starts real redis-server and
# mariadbd (one or more of each), spawn-fcgi pools and lighttpd in a
# temporary folder on loopback ports chosen by the kernel, and stops them (by
# PID, only those it started) on exit. The demo (conf/demo.sh) sources this
# file; the tests source tests/lib/harness.sh, which adds TCP proxies, silent
# listeners, Galera clusters and Redis Sentinels (their functions are listed
# below with the rest: harness_start_proxy, harness_proxy, harness_silent_*,
# harness_*galera*, harness_*sentinel*). One file per server, each with its
# functions: tools/harness/core.sh (records, stop, folder, environment
# file), redis.sh, mariadb.sh, payhook.sh (pools), lighttpd.sh;
# tests/lib/proxy.sh, galera.sh, sentinel.sh.
#
#   . "$top_srcdir/tools/harness.sh"
#   harness_init || exit 99          # temp folder + cleanup trap on EXIT
#   harness_start_redis || exit 99   # exports REDIS_PORT, PAYHOOK_REDIS_*
#   harness_start_mariadb || exit 99 # exports MYSQL_*, PAYHOOK_MYSQL_*
#   harness_sql "SELECT COUNT(*) FROM payments"
#
# Every function prints why on stderr and returns non-zero when it fails; stdout
# only gets one "# harness: ..." line per server started. The library works
# with and without set -euo pipefail: the functions turn errexit off inside
# (local -) and report failure by their status. NAME arguments that become
# part of a variable name (servers, proxies, silent listeners) are letters,
# digits and _, not starting with a digit.
#
# Public functions:
#   harness_init                 make HARNESS_DIR, install the cleanup traps
#   harness_cleanup              stop every process recorded, remove HARNESS_DIR
#                                (kept when HARNESS_KEEP=1); runs on EXIT
#   harness_attach               use the servers of an existing HARNESS_DIR
#                                (what tests/lib/harness-ctl.sh does)
#   harness_export_env           write the environment to $HARNESS_DIR/env
#   harness_start_redis [NAME]   start redis-server, or restart it on its port;
#                                NAME (default redis) starts another one
#   harness_stop_redis [NAME]    stop it (TERM, wait until gone)
#   harness_redis ARGS...        redis-cli against the default redis
#   harness_redis_on NAME ARGS...
#                                redis-cli against redis NAME
#   harness_start_mariadb [NAME] start mariadbd (installed, database, users and
#                                db/schema.sql loaded the first time), or
#                                restart it on the same port and datadir;
#                                NAME (default mariadb) starts another one
#   harness_stop_mariadb [NAME]  stop it (TERM, wait until gone)
#   harness_sql "SQL"            run SQL as the admin account over the socket
#                                of the default mariadb in database payhook,
#                                print the rows
#   harness_sql_on NAME "SQL"    the same on mariadb NAME
#   harness_pause NAME / harness_resume NAME
#                                SIGSTOP / SIGCONT a recorded process (redis,
#                                mariadb, redis-NAME, mariadb-NAME,
#                                proxy-NAME...): a backend that accepts but
#                                never answers
#   harness_start_proxy NAME HOST:PORT
#                                tests/servers/tcpproxy on a kernel-chosen loopback
#                                port in front of HOST:PORT, controlled over
#                                $HARNESS_DIR/proxy-NAME.sock; exports
#                                PROXY_PORT_<NAME>; stopped by harness_stop
#                                proxy-NAME or at cleanup
#   harness_proxy NAME COMMAND...
#                                one control command (target, delay, stall,
#                                drop, refuse, blackhole, stats: see
#                                tests/servers/tcpproxy.c); prints the reply, fails
#                                unless it is "ok..."
#   harness_silent_listener NAME a loopback port that accepts connections and
#                                never answers; exports SILENT_PORT_<NAME>
#   harness_stop_silent_listener NAME
#   harness_spawn_pool NAME WORKERS SOCKET [SPAWN-FCGI OPTIONS...] -- COMMAND...
#                                spawn-fcgi -F WORKERS -s SOCKET -P
#                                $HARNESS_DIR/NAME.pid running COMMAND, its
#                                stderr appended to $HARNESS_DIR/NAME.log;
#                                then harness_record_pool
#   harness_record_pool NAME WORKERS [STATUS]
#                                record the PIDs spawn-fcgi wrote to
#                                $HARNESS_DIR/NAME.pid as NAME-0, NAME-1...,
#                                set the array HARNESS_POOL_PIDS; fail when
#                                STATUS (spawn-fcgi's) is not 0 or fewer than
#                                WORKERS started
#   harness_start_lighttpd NAME SNIPPET [ENV...]
#                                lighttpd -D on 127.0.0.1 including SNIPPET, as
#                                a background job of this script; with ENV
#                                (NAME=VALUE...), under env -i with only those;
#                                returns once it answers GET / (which reaches
#                                no worker); sets LIGHTTPD_PORT, LIGHTTPD_PID,
#                                LIGHTTPD_LOG (error log), LIGHTTPD_OUT (stdout
#                                and stderr: a bin-path worker's log)
#   harness_wait_http URL STATUS SECONDS [PID]
#                                poll URL with curl until the answer's status
#                                is STATUS (a glob: '[1-5]??' is any answer);
#                                fails after SECONDS, or at once when process
#                                PID is gone
#   harness_fill SRC DST NAME=VALUE...
#                                a conf/ file with its @NAME@ placeholders set
#   harness_record NAME PID      record process PID as NAME: stopped at cleanup
#   harness_running NAME         succeeds while NAME is a live process we
#                                recorded (start time checked); sets HARNESS_PID
#   harness_stop NAME...         TERM (then KILL) the recorded processes, wait
#                                until gone
#   harness_now_ms               the current time in milliseconds
#   harness_starttime PID        the start time of process PID (fails when
#                                gone): tells it from a later one with its PID
#   harness_log_tail FILE        the last 15 lines of FILE on stderr
#   harness_free_port            a free loopback port below the ephemeral range
#   harness_kill NAME...         SIGKILL the recorded processes (a crash),
#                                wait until gone
#   harness_start_galera NAME [N]
#                                a MariaDB Galera cluster of N (3) nodes,
#                                mariadb NAME1..NAMEN (as the mysql user when
#                                root; galera-4 and rsync needed): node 1
#                                bootstraps and gets the database, users and
#                                schema, the others join by SST; returns once
#                                all are Synced; exports GALERA_NODES_<NAME>
#   harness_start_galera_node NAME K [MARIADBD OPTIONS...]
#                                (re)start node K (after harness_stop_mariadb
#                                NAMEK or harness_kill mariadb-NAMEK; a crashed
#                                node runs --wsrep-recover first, to rejoin
#                                by IST); returns once it is Synced
#   harness_galera_state NAME K  prints node K's wsrep_local_state_comment,
#                                wsrep_cluster_status and wsrep_ready
#                                ("Synced Primary ON")
#   harness_galera_wait NAME K STATE SECONDS
#                                until harness_galera_state matches STATE
#   harness_start_sentinel NAME MASTER_NAME MASTER_PORT [QUORUM]
#                                redis-server --sentinel monitoring
#                                127.0.0.1:MASTER_PORT; exports
#                                SENTINEL_PORT_<NAME>, recorded as
#                                sentinel-NAME
#   harness_sentinel NAME ARGS...
#                                redis-cli against sentinel NAME
#
# Exported: HARNESS_DIR; REDIS_PORT, REDIS_SOCKET, PAYHOOK_REDIS_HOST,
# PAYHOOK_REDIS_PORT; MYSQL_PORT, MYSQL_SOCKET, PAYHOOK_MYSQL_HOST,
# PAYHOOK_MYSQL_PORT, PAYHOOK_MYSQL_USER, PAYHOOK_MYSQL_PASSWORD,
# PAYHOOK_MYSQL_DATABASE; REDIS_PORT_<NAME>, MYSQL_PORT_<NAME>,
# MYSQL_SOCKET_<NAME> of the named servers; SENTINEL_PORT_<NAME>;
# GALERA_NODES_<NAME>; PROXY_PORT_<NAME>; SILENT_PORT_<NAME> (NAME
# upper-cased). The PAYHOOK_* variables always point at the default servers:
# payhook refuses any PAYHOOK_* that names no configuration key, so the
# harness invents none.
#
# $HARNESS_DIR/env holds them as NAME=VALUE lines (values quoted by printf %q,
# which leaves the harness's own values as they are), rewritten after every
# start by the owning script; the lines of the named servers and proxies come
# from their port files, so that one harness-ctl.sh started is listed too. A C
# test program reads it or its environment.
#
# Settings (environment): HARNESS_KEEP=1 keeps the folder; HARNESS_CACHE=DIR
# keeps a pristine mariadb-install-db datadir there (one per server version)
# and copies it instead of installing each time (install-db measured at about
# 0.7-1.8 s here, the copy at 0.2 s, so it is off by default);
# HARNESS_START_TIMEOUT_REDIS (10), HARNESS_START_TIMEOUT_MARIADB (30),
# HARNESS_START_TIMEOUT_LIGHTTPD (10), HARNESS_START_TIMEOUT_GALERA (120:
# a node until Synced) and HARNESS_STOP_TIMEOUT (10), in seconds;
# HARNESS_GALERA_PROVIDER (/usr/lib/galera/libgalera_smm.so);
# HARNESS_SENTINEL_DOWN_AFTER_MS (1000) and
# HARNESS_SENTINEL_FAILOVER_TIMEOUT_MS (3000); HARNESS_LIGHTTPD_PORT=N
# makes harness_start_lighttpd use port N (the demo's fixed port) instead of
# a free one.
#
# Layout of $HARNESS_DIR: pids/NAME ("PID STARTTIME" of each process we run,
# so a recycled PID is never signalled), redis/ (log), redis.sock, redis.port,
# mariadb/ (data/, error.log, install.log), mysql.sock, mariadb.port,
# mariadb.ready (first-start setup done); NAME/ for the named servers
# (redis.log, redis.sock, redis.port of redis NAME, recorded as redis-NAME;
# data/, error.log, mysql.sock, mariadb.port, mariadb.ready of mariadb NAME,
# recorded as mariadb-NAME); proxy-NAME.{sock,port,log};
# silent-NAME.{port,log}; NAME.galera (the gcomm addresses) and NAMEK/ of
# Galera node K (as mariadb NAMEK, plus galera.ports, recover.log);
# NAME/sentinel.{conf,log,port} of a sentinel; NAME.{pid,out,log} of a pool;
# NAME.{conf,port,out}, NAME-error.log, www/ and upload/ of a lighttpd; env.


# ---- locations --------------------------------------------------------------

# top_srcdir and top_builddir come from the Makefile's test environment; run by
# hand, the source tree is the one holding this file's folder and the build
# tree is the current folder when it has tools/freeport, else the source tree.
if [ -z "${top_srcdir:-}" ]; then
	top_srcdir=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
fi
if [ -z "${top_builddir:-}" ]; then
	if [ -x "$PWD/tools/freeport" ]; then
		top_builddir=$PWD
	else
		top_builddir=$top_srcdir
	fi
fi
export top_srcdir top_builddir
harness__freeport=$top_builddir/tools/freeport
harness__owner=0
harness__after_cleanup=
# mariadbd refuses to run as root without --user naming it; the install-db
# socket-authenticated admin account is named after the same user.
harness__user=$(id -un)

# shellcheck source=tools/harness/core.sh
. "$top_srcdir/tools/harness/core.sh" || return 1
# shellcheck source=tools/harness/redis.sh
. "$top_srcdir/tools/harness/redis.sh" || return 1
# shellcheck source=tools/harness/mariadb.sh
. "$top_srcdir/tools/harness/mariadb.sh" || return 1
# shellcheck source=tools/harness/payhook.sh
. "$top_srcdir/tools/harness/payhook.sh" || return 1
# shellcheck source=tools/harness/lighttpd.sh
. "$top_srcdir/tools/harness/lighttpd.sh" || return 1
