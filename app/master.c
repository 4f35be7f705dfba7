/* master.c - payhook --workers N (see master.h): the listening socket, the
 * reload and the upgrade. Its workers are kept by the pool manager
 * (lib/shared/pool.h), forked with the configuration already loaded; each builds
 * its own pipeline (its own backend connections) after the fork.
 */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <poll.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <grp.h>
#include <limits.h>
#include <pwd.h>
#include <unistd.h>

#include "listen_queue.h"
#include "log.h"
#include "master.h"
#include "metrics.h"
#include "number.h"
#include "pool.h"
#include "pipeline.h"
#include "timing.h"
#include "worker.h"

/* Handed from one image of the master to the next across an upgrade's
 * exec. Not PAYHOOK_*: those name configuration keys. */
#define ENV_LISTEN_FD "PAYHOOKD_LISTEN_FD"
#define ENV_METRICS_FD "PAYHOOKD_METRICS_FD"
#define ENV_WORKERS "PAYHOOKD_WORKERS"

#define LISTEN_BACKLOG 1024
#define UPGRADE_CHECK_MS 10000
/* A new worker that has not passed its start-up checks by then failed. */
#define READY_TIMEOUT_MS 10000
/* How often the master reads the workers' slots: the resolution of the
 * slow log, of the terminate timeout and of the pool's maxima. */
#define LOOK_MS 250

struct master {
	const struct master_options *opts;
	struct config *cfg;     /* the serving workers' */
	struct config next;     /* a reload's, while its workers start */
	bool reloading;         /* next is loaded */
	struct metrics *metrics;
	/* --user/--group: whom the files the master creates belong to. */
	struct sharedfile_owner owner;
	int listen_fd;
	const char *made_path;  /* the unix socket --listen made, or NULL */
	struct pool *pool;
	struct metrics_worker *seen; /* POOL_MAX, for look() */
	bool queue_unknown_said;     /* the listen queue's failure, logged */
	/* payhook-dispatch beside this program: it sends the pool's alerts,
	 * so that payhook needs no HTTP client. */
	char alert_sender[PATH_MAX];
};

/* ---- the listening socket ---- */

static bool is_listening_socket(int fd)
{
	int accepting = 0;
	socklen_t len = sizeof(accepting);

	return getsockopt(fd, SOL_SOCKET, SO_ACCEPTCONN, &accepting, &len) == 0 &&
	       accepting != 0;
}

static int listen_unix(const char *path, unsigned mode, struct error *err)
{
	struct sockaddr_un addr = { .sun_family = AF_UNIX };
	int fd;

	if (strlen(path) >= sizeof(addr.sun_path))
		return error_set(err, "--listen %s: path too long", path);
	memcpy(addr.sun_path, path, strlen(path) + 1);
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return error_set(err, "socket: %s", strerror(errno));
	/* A socket file left by a pool that is gone is removed; one that
	 * still answers belongs to a running pool. */
	if (connect(fd, (struct sockaddr *)&addr, sizeof(addr)) == 0) {
		close(fd);
		return error_set(err, "--listen %s: a running pool answers "
				 "there", path);
	}
	close(fd);
	unlink(path);
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return error_set(err, "socket: %s", strerror(errno));
	if (bind(fd, (struct sockaddr *)&addr, sizeof(addr)) != 0 ||
	    fchmodat(AT_FDCWD, path, (mode_t)mode, AT_SYMLINK_NOFOLLOW) != 0 ||
	    listen(fd, LISTEN_BACKLOG) != 0) {
		error_set(err, "--listen %s: %s", path, strerror(errno));
		close(fd);
		return -1;
	}
	return fd;
}

static int listen_tcp(const char *spec, struct error *err)
{
	struct addrinfo hints = { .ai_family = AF_UNSPEC,
				  .ai_socktype = SOCK_STREAM,
				  .ai_flags = AI_PASSIVE };
	struct addrinfo *res = NULL;
	const char *colon = strrchr(spec, ':');
	char host[256];
	int fd = -1, one = 1, rc;

	if (colon == NULL || (size_t)(colon - spec) >= sizeof(host))
		return error_set(err, "--listen %s: expected PATH or HOST:PORT",
				 spec);
	memcpy(host, spec, (size_t)(colon - spec));
	host[colon - spec] = '\0';
	rc = getaddrinfo(host, colon + 1, &hints, &res);
	if (rc != 0)
		return error_set(err, "--listen %s: %s", spec, gai_strerror(rc));
	fd = socket(res->ai_family, res->ai_socktype | SOCK_CLOEXEC,
		    res->ai_protocol);
	if (fd < 0 ||
	    setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one)) != 0 ||
	    bind(fd, res->ai_addr, res->ai_addrlen) != 0 ||
	    listen(fd, LISTEN_BACKLOG) != 0) {
		error_set(err, "--listen %s: %s", spec, strerror(errno));
		if (fd >= 0)
			close(fd);
		fd = -1;
	}
	freeaddrinfo(res);
	return fd;
}

/* The socket the pool serves: handed on by the previous image (upgrade),
 * by systemd (socket activation), made from --listen, or descriptor 0 as
 * spawn-fcgi and the FastCGI spec hand it over. */
static int find_listen_fd(const struct master_options *opts, struct error *err)
{
	const char *inherited = getenv(ENV_LISTEN_FD);
	const char *listen_pid = getenv("LISTEN_PID");
	const char *listen_fds = getenv("LISTEN_FDS");
	uint64_t n;

	if (inherited != NULL) {
		if (number_parse(inherited, 65535, &n) != NUMBER_OK ||
		    !is_listening_socket((int)n))
			return error_set(err, "%s is not a listening socket",
					 ENV_LISTEN_FD);
		return (int)n;
	}
	if (listen_pid != NULL && listen_fds != NULL &&
	    number_parse(listen_pid, UINT32_MAX, &n) == NUMBER_OK &&
	    (pid_t)n == getpid() && strcmp(listen_fds, "0") != 0) {
		/* systemd's first socket is descriptor 3 (SD_LISTEN_FDS_START). */
		if (!is_listening_socket(3))
			return error_set(err, "LISTEN_FDS: descriptor 3 is not "
					 "a listening socket");
		return 3;
	}
	if (opts->listen != NULL) {
		if (opts->listen[0] == '/' || strchr(opts->listen, ':') == NULL)
			return listen_unix(opts->listen, opts->socket_mode, err);
		return listen_tcp(opts->listen, err);
	}
	if (is_listening_socket(0))
		return 0;
	return error_set(err, "no listening socket: pass --listen PATH or "
			 "HOST:PORT, or start payhook under spawn-fcgi -F 1 or "
			 "a systemd socket unit");
}

/* ---- users ---- */

/* Resolves a user given by name or number, and (when gid is not NULL)
 * its primary group and its name. Returns 0, or -1 with err set. */
static int find_user(const char *name, uid_t *uid, gid_t *gid,
		     const char **user_name, struct error *err)
{
	struct passwd *pw = getpwnam(name);
	uint64_t n;

	if (pw == NULL && number_parse(name, INT32_MAX, &n) == NUMBER_OK)
		pw = getpwuid((uid_t)n);
	if (pw != NULL) {
		*uid = pw->pw_uid;
		if (gid != NULL)
			*gid = pw->pw_gid;
		if (user_name != NULL)
			*user_name = name;
		return 0;
	}
	/* A number without a passwd entry is fine for a socket's owner; a
	 * worker would run in root's group. */
	if (gid != NULL || number_parse(name, INT32_MAX, &n) != NUMBER_OK)
		return error_set(err, "no user %s", name);
	*uid = (uid_t)n;
	return 0;
}

static int find_group(const char *name, gid_t *gid, struct error *err)
{
	struct group *gr = getgrnam(name);
	uint64_t n;

	if (gr != NULL) {
		*gid = gr->gr_gid;
		return 0;
	}
	if (number_parse(name, INT32_MAX, &n) != NUMBER_OK)
		return error_set(err, "no group %s", name);
	*gid = (gid_t)n;
	return 0;
}

/* --user and --group: the workers' identity for the pool, checked before
 * any starts. Returns 0, or -1 with err set. */
static int find_identity(const struct master_options *o,
			 struct pool_config *pc, struct error *err)
{
	if (o->user == NULL && o->group == NULL)
		return 0;
	if (geteuid() != 0)
		return error_set(err, "--user and --group need the master "
				 "started as root");
	pc->set_identity = true;
	pc->uid = getuid();
	pc->gid = getgid();
	if (o->user != NULL && find_user(o->user, &pc->uid, &pc->gid,
					 &pc->user_name, err) != 0)
		return -1;
	if (o->group != NULL && find_group(o->group, &pc->gid, err) != 0)
		return -1;
	return 0;
}

/* --socket-user and --socket-group on the socket --listen made. */
static int own_socket(const struct master *m, struct error *err)
{
	const struct master_options *o = m->opts;
	uid_t uid = (uid_t)-1;
	gid_t gid = (gid_t)-1;

	if (o->socket_user == NULL && o->socket_group == NULL)
		return 0;
	if (m->made_path == NULL)
		return error_set(err, "--socket-user and --socket-group need "
				 "--listen PATH");
	if (o->socket_user != NULL && find_user(o->socket_user, &uid, NULL,
						NULL, err) != 0)
		return -1;
	if (o->socket_group != NULL && find_group(o->socket_group, &gid,
						  err) != 0)
		return -1;
	if (lchown(m->made_path, uid, gid) != 0)
		return error_set(err, "--listen %s: chown: %s", m->made_path,
				 strerror(errno));
	return 0;
}

/* ---- workers ---- */

/* A worker's entry (see pool.h), already as --user/--group: the socket on
 * descriptor 0, as the FastCGI spec has it, then the worker loop. A
 * replacement runs with the reload's configuration. Never returns. */
static void worker_entry(void *ctx, bool replacement, int ready_fd)
{
	struct master *m = ctx;
	const struct config *cfg = replacement && m->reloading ? &m->next : m->cfg;

	if (m->listen_fd != 0) {
		if (dup2(m->listen_fd, 0) != 0)
			_exit(1);
		close(m->listen_fd);
	}
	exit(worker_run(cfg, m->metrics, m->opts->max_requests, ready_fd));
}

static void worker_gone(void *ctx, pid_t pid, bool crashed)
{
	struct master *m = ctx;

	metrics_worker_gone(m->metrics, pid);
	if (crashed)
		metrics_worker_restarted(m->metrics);
}

/* ---- the master's look at its workers ---- */

static bool is_ours(pid_t pid, const pid_t *pids, size_t count)
{
	for (size_t i = 0; i < count; i++)
		if (pids[i] == pid)
			return true;
	return false;
}

/* Every LOOK_MS (pool tick): the pool's maxima and listen queue, then each
 * busy worker of this pool against request_slowlog_timeout_ms (logged once
 * per request) and request_terminate_timeout_ms (SIGKILL: its request was
 * not answered, so the provider retries; the pool starts a new worker). */
static void look(void *ctx)
{
	struct master *m = ctx;
	const struct config *cfg = m->cfg;
	pid_t pids[2 * POOL_MAX];
	size_t count = pool_pids(m->pool, pids, sizeof(pids) / sizeof(pids[0]));
	size_t n = metrics_read_status(m->metrics, NULL, m->seen, POOL_MAX);
	long long queued, backlog;
	unsigned active = 0;
	struct error err;

	if (listen_queue_read(m->listen_fd, &queued, &backlog, &err) != 0 &&
	    !m->queue_unknown_said) {
		log_info("the listen queue is not shown: %s", err.message);
		m->queue_unknown_said = true;
	}
	for (size_t i = 0; i < n; i++) {
		const struct metrics_worker *w = &m->seen[i];
		long long ms = w->elapsed_us / 1000;
		const char *profile = w->provider < CONFIG_PROVIDER_COUNT ?
			config_provider_name(w->provider) : "-";
		const char *id = w->transaction_id[0] != '\0' ?
			w->transaction_id : "-";

		if (w->stage == METRICS_IDLE || !is_ours(w->pid, pids, count))
			continue;
		active++;
		if (cfg->request_slowlog_timeout_ms > 0 &&
		    ms >= cfg->request_slowlog_timeout_ms &&
		    metrics_slow_seen(m->metrics, w->pid, w->request))
			log_warn("slow request: worker %ld has been %s for "
				 "%lld ms (request_slowlog_timeout_ms = %ld): "
				 "profile %s, transaction_id %s", (long)w->pid,
				 metrics_stage_name(w->stage), ms,
				 cfg->request_slowlog_timeout_ms, profile, id);
		if (cfg->request_terminate_timeout_ms > 0 &&
		    ms >= cfg->request_terminate_timeout_ms &&
		    metrics_terminated_seen(m->metrics, w->pid, w->request)) {
			log_error("stuck request: worker %ld has been %s for "
				  "%lld ms (request_terminate_timeout_ms = %ld): "
				  "SIGKILL; profile %s, transaction_id %s was "
				  "not answered, the provider retries it",
				  (long)w->pid, metrics_stage_name(w->stage),
				  ms, cfg->request_terminate_timeout_ms,
				  profile, id);
			kill(w->pid, SIGKILL);
		}
	}
	metrics_pool_sample(m->metrics, active, queued, backlog);
}

/* ---- alerts ---- */

int master_alert_sender(const char *program, char *buf, size_t cap)
{
	const char *slash = strrchr(program, '/');
	int len = slash != NULL ? (int)(slash - program) : 0;

	if (slash == NULL ||
	    snprintf(buf, cap, "%.*s/payhook-dispatch", len, program) >=
		    (int)cap) {
		snprintf(buf, cap, "payhook-dispatch");
		return -1;
	}
	return access(buf, X_OK);
}

/* Finds payhook-dispatch beside the program. Missing, it is an error in
 * the log when an alert key is set; the pool serves all the same (a
 * missing alert must not stop payments, nor an upgrade's new image). */
static void find_alert_sender(struct master *m)
{
	if (master_alert_sender(m->opts->program, m->alert_sender,
				sizeof(m->alert_sender)) != 0 &&
	    config_alerts_set(m->cfg))
		log_error("alert_url or alert_command is set, and the pool "
			  "sends its alerts with payhook-dispatch, which is "
			  "not at %s: the pool's alerts will fail until it is "
			  "installed beside payhook", m->alert_sender);
}

/* A crash loop of the workers (pool.h), or its end: the alert goes out
 * through payhook-dispatch --send-alert, a helper of the pool's loop. */
static void pool_alert(void *ctx, const struct pool_alert *a)
{
	struct master *m = ctx;
	struct error err = { "" };

	if (!config_alerts_set(m->cfg))
		return;
	if (pool_send_alert(m->pool, a, m->alert_sender, "payhook",
			    m->opts->config_path, &err) != 0)
		log_error("alert %s not sent: %s", a->event, err.message);
}

/* ---- signals: reload, upgrade ---- */

/* A stop's SIGKILL comes after the longest a request may take, and a
 * margin. */
static long stop_timeout_ms(const struct config *cfg)
{
	return cfg->lock_ttl_ms + 5000;
}

static void apply_logging(const struct config *cfg)
{
	struct error err;

	log_init("payhook", cfg->log_level);
	log_set_format(cfg->log_format);
	if (cfg->log_target == CONFIG_LOG_TARGET_SYSLOG)
		log_open_syslog();
	else if (cfg->log_file != NULL && log_open_file(cfg->log_file, &err) != 0)
		log_error("%s", err.message);
	else if (cfg->log_file == NULL && log_reopen(&err) != 0)
		log_error("%s", err.message);
}

/* A refused reload still does what logrotate sends SIGHUP for: the master
 * and every worker reopen their log. */
static void refuse_reload(struct master *m, const char *why)
{
	apply_logging(m->cfg);
	log_error("reload refused, the workers keep their configuration: %s",
		  why);
	metrics_reloaded(m->metrics, false);
	pool_signal(m->pool, SIGHUP);
}

static bool same_text(const char *a, const char *b)
{
	return a == b || (a != NULL && b != NULL && strcmp(a, b) == 0);
}

/* Keys the master uses only when it starts: a reload keeps their running
 * value and says so. Returns 0, or -1 with err set (out of memory). */
static int keep_restart_keys(const struct config *cfg, struct config *next,
			     struct error *err)
{
	char *kept;

	if (same_text(cfg->metrics_file, next->metrics_file))
		return 0;
	log_warn("reload: metrics_file changed from %s to %s: the counters' "
		 "file is opened once, at start; restart the pool to change "
		 "it (the rest of the reload applies)",
		 cfg->metrics_file != NULL ? cfg->metrics_file : "(none)",
		 next->metrics_file != NULL ? next->metrics_file : "(none)");
	kept = cfg->metrics_file != NULL ? strdup(cfg->metrics_file) : NULL;
	if (cfg->metrics_file != NULL && kept == NULL)
		return error_set(err, "out of memory");
	free(next->metrics_file);
	next->metrics_file = kept;
	return 0;
}

/* SIGHUP: a new configuration for a new generation of workers. The old
 * workers serve until every new one passed its start-up checks
 * (replaced() below), or on, when one fails. */
static void reload(struct master *m)
{
	struct error err;

	/* First the log (logrotate's SIGHUP): the new workers inherit it. */
	apply_logging(m->cfg);
	if (m->reloading) {
		log_warn("reload ignored: the previous one is still starting "
			 "its workers");
		return;
	}
	if (pipeline_load_config(&m->next, m->opts->config_path, &err) != 0) {
		refuse_reload(m, err.message);
		return;
	}
	if (keep_restart_keys(m->cfg, &m->next, &err) != 0) {
		config_cleanup(&m->next);
		refuse_reload(m, err.message);
		return;
	}
	m->reloading = true;
	if (pool_replace(m->pool, &err) != 0) {
		m->reloading = false;
		config_cleanup(&m->next);
		refuse_reload(m, err.message);
		return;
	}
	log_info("configuration loaded: starting %u new workers; the old ones "
		 "serve until every new one is ready", m->opts->workers);
}

/* The end of a replacement (pool.h): a reload's or an upgrade's. */
static void replaced(void *ctx, bool ok)
{
	struct master *m = ctx;

	if (!m->reloading) {
		if (!ok)
			log_error("upgrade: the new workers could not start; the "
				  "previous ones keep serving");
		return;
	}
	m->reloading = false;
	if (!ok) {
		config_cleanup(&m->next);
		refuse_reload(m, "a new worker could not start (its reason is "
			      "logged above)");
		return;
	}
	config_cleanup(m->cfg);
	*m->cfg = m->next;
	memset(&m->next, 0, sizeof(m->next));
	apply_logging(m->cfg);
	pool_set_stop_timeout(m->pool, stop_timeout_ms(m->cfg));
	metrics_reloaded(m->metrics, true);
	log_info("configuration reloaded: %u workers replaced",
		 m->opts->workers);
}

/* FD_CLOEXEC on or off: the socket and the segment reach the next image of
 * an upgrade, and no helper (an alert's payhook-dispatch, its
 * alert_command; the upgrade's --test-config). */
static void set_cloexec(int fd, bool on)
{
	int flags = fcntl(fd, F_GETFD);

	if (flags >= 0)
		fcntl(fd, F_SETFD, on ? flags | FD_CLOEXEC : flags & ~FD_CLOEXEC);
}

/* The new binary's --test-config ended: exec it in place when it accepted
 * the configuration. The PID, the socket, the metrics and the workers
 * (children of this PID either way) carry over; the new image starts its
 * own workers and retires these once they are ready. */
static void upgrade_checked(void *ctx, bool ok)
{
	struct master *m = ctx;
	char fd_text[16], metrics_text[16];
	pid_t pids[2 * POOL_MAX];
	size_t count, len = 0, cap = sizeof(pids) / sizeof(pids[0]) * 12 + 1;
	char *list;

	if (!ok) {
		log_error("upgrade refused: %s --test-config failed; the pool "
			  "keeps running", m->opts->program);
		return;
	}
	list = calloc(1, cap);
	if (list == NULL) {
		log_error("upgrade refused: out of memory");
		return;
	}
	count = pool_pids(m->pool, pids, sizeof(pids) / sizeof(pids[0]));
	for (size_t i = 0; i < count; i++)
		len += (size_t)snprintf(list + len, cap - len, "%s%ld",
					len > 0 ? "," : "", (long)pids[i]);
	snprintf(fd_text, sizeof(fd_text), "%d", m->listen_fd);
	snprintf(metrics_text, sizeof(metrics_text), "%d",
		 metrics_fd(m->metrics));
	setenv(ENV_LISTEN_FD, fd_text, 1);
	setenv(ENV_METRICS_FD, metrics_text, 1);
	setenv(ENV_WORKERS, list, 1);
	free(list);
	set_cloexec(m->listen_fd, false);
	set_cloexec(metrics_fd(m->metrics), false);
	log_info("upgrading: exec %s", m->opts->program);
	/* The signal mask stays: signals that arrive meanwhile wait for the
	 * new image's signalfd. The workers' PR_SET_PDEATHSIG does not fire:
	 * their parent, this PID, lives on. */
	execv(m->opts->program, m->opts->argv);
	log_error("upgrade failed: exec %s: %s; the pool keeps running",
		  m->opts->program, strerror(errno));
	if (m->listen_fd != 0)
		set_cloexec(m->listen_fd, true);
	set_cloexec(metrics_fd(m->metrics), true);
	unsetenv(ENV_LISTEN_FD);
	unsetenv(ENV_METRICS_FD);
	unsetenv(ENV_WORKERS);
}

/* SIGUSR2: the new binary must accept the configuration (its
 * --test-config runs every start-up check a worker runs) before it
 * replaces this one; the check is a helper of the pool's loop, which goes
 * on reaping and restarting meanwhile. */
static void upgrade(struct master *m)
{
	char *argv[5];
	int argc = 0;
	struct error err;

	if (m->reloading) {
		log_error("upgrade refused: a reload is still starting its "
			  "workers; send SIGUSR2 again later");
		return;
	}
	argv[argc++] = (char *)m->opts->program;
	argv[argc++] = "--test-config";
	if (m->opts->config_path != NULL) {
		argv[argc++] = "-c";
		argv[argc++] = (char *)m->opts->config_path;
	}
	argv[argc] = NULL;
	if (pool_run_helper(m->pool, argv, UPGRADE_CHECK_MS, upgrade_checked,
			    &err) != 0)
		log_error("upgrade refused: %s", err.message);
}

static void on_signal(void *ctx, int signo)
{
	struct master *m = ctx;

	if (signo == SIGHUP)
		reload(m);
	else if (signo == SIGUSR2)
		upgrade(m);
}

/* Workers of the previous image (an upgrade): they are this process's
 * children, and serve until the new ones are ready. Returns how many. */
static unsigned adopt_old_workers(struct master *m)
{
	const char *list = getenv(ENV_WORKERS);
	char *copy, *save = NULL;
	unsigned count = 0;

	if (list == NULL)
		return 0;
	copy = strdup(list);
	for (char *t = copy != NULL ? strtok_r(copy, ",", &save) : NULL;
	     t != NULL; t = strtok_r(NULL, ",", &save)) {
		uint64_t pid;

		if (number_parse(t, INT32_MAX, &pid) == NUMBER_OK && pid > 0) {
			pool_adopt(m->pool, (pid_t)pid);
			count++;
		}
	}
	free(copy);
	unsetenv(ENV_WORKERS);
	return count;
}

static struct metrics *open_metrics(const struct config *cfg,
				    const struct sharedfile_owner *owner,
				    struct error *err)
{
	const char *inherited = getenv(ENV_METRICS_FD);
	uint64_t fd;
	struct metrics *m;

	if (inherited != NULL && number_parse(inherited, 65535, &fd) == NUMBER_OK) {
		unsetenv(ENV_METRICS_FD);
		m = metrics_attach_fd((int)fd, err);
		if (m != NULL)
			return m;
	}
	if (cfg->metrics_file != NULL)
		return metrics_open_file_for(cfg->metrics_file, owner, err);
	return metrics_new_shared(err);
}

static void master_release(struct master *m)
{
	pool_free(m->pool);
	metrics_free(m->metrics);
	free(m->seen);
	config_cleanup(m->cfg);
	if (m->reloading)
		config_cleanup(&m->next);
	free(m);
}

int master_run(const struct master_options *opts, struct config *cfg)
{
	struct master *m = calloc(1, sizeof(*m));
	struct error err = { "" };
	struct pool_config pc = {
		.noun = "worker",
		.count = opts->workers,
		.title = "payhook: master",
		.child_title = "payhook: worker",
		.stop_timeout_ms = stop_timeout_ms(cfg),
		.ready_timeout_ms = READY_TIMEOUT_MS,
		.entry = worker_entry,
		.on_signal = on_signal,
		.on_replaced = replaced,
		.on_child_gone = worker_gone,
		.tick_ms = LOOK_MS,
		.on_tick = look,
		.on_alert = pool_alert,
	};
	unsigned unclean = 0;
	bool started_now;

	if (m == NULL) {
		fprintf(stderr, "payhook: master: out of memory\n");
		config_cleanup(cfg);
		return 1;
	}
	m->opts = opts;
	m->cfg = cfg;
	m->listen_fd = -1;
	pc.ctx = m;
	if (find_identity(opts, &pc, &err) != 0)
		goto fail;
	if (pc.set_identity) {
		/* log_file and metrics_file, when the master makes them, are
		 * the workers' (and payhook-dispatch's, run as their user). */
		m->owner = (struct sharedfile_owner){ true, pc.uid, pc.gid };
		log_set_file_owner(&m->owner);
	}
	find_alert_sender(m);
	m->pool = pool_new(&pc, &err);
	/* pool_new set up the signals (signals.h): SIGPIPE is ignored. */
	if (m->pool == NULL)
		goto fail;
	m->listen_fd = find_listen_fd(opts, &err);
	if (m->listen_fd < 0)
		goto fail;
	/* Inherited (an upgrade's, systemd's) it is not close-on-exec. The
	 * workers take it on descriptor 0 (dup2 clears the flag); spawn-fcgi's
	 * descriptor 0 stays as it is (the helpers get /dev/null there). */
	if (m->listen_fd != 0)
		set_cloexec(m->listen_fd, true);
	/* A unix socket of --listen is this pool's (made now, or by the
	 * image before an upgrade): removed when the pool stops. */
	if (opts->listen != NULL &&
	    (opts->listen[0] == '/' || strchr(opts->listen, ':') == NULL))
		m->made_path = opts->listen;
	if (getenv(ENV_LISTEN_FD) == NULL && own_socket(m, &err) != 0)
		goto fail;
	unsetenv(ENV_LISTEN_FD);
	started_now = getenv(ENV_METRICS_FD) == NULL;
	m->metrics = open_metrics(cfg, &m->owner, &err);
	if (m->metrics == NULL)
		goto fail;
	metrics_pool_started(m->metrics, opts->workers, started_now);
	m->seen = calloc(POOL_MAX, sizeof(*m->seen));
	if (m->seen == NULL) {
		error_set(&err, "out of memory");
		goto fail;
	}
	if (adopt_old_workers(m) > 0 && pool_replace(m->pool, &err) != 0)
		log_error("upgrade: starting the new workers: %s", err.message);
	log_info("master %ld: %u workers (configuration %s)", (long)getpid(),
		 opts->workers,
		 opts->config_path != NULL ? opts->config_path : "from the "
								 "environment");
	if (pool_run(m->pool, &unclean, &err) != 0)
		log_error("master: %s", err.message);
	if (m->made_path != NULL)
		unlink(m->made_path);
	log_info("master %ld: stopped", (long)getpid());
	master_release(m);
	return 0;
fail:
	fprintf(stderr, "payhook: master cannot start: %s\n", err.message);
	log_error("master cannot start: %s", err.message);
	if (m->made_path != NULL && getenv(ENV_LISTEN_FD) == NULL)
		unlink(m->made_path);
	master_release(m);
	return 1;
}
