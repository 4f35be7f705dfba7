/* master.c - the pool manager of payhook --workers N (see master.h).
 *
 * The master blocks its signals and reads them from a signalfd in one poll
 * loop, so a signal never interrupts its bookkeeping. Workers are forked
 * from it with the configuration already loaded; each builds its own
 * pipeline (its own backend connections) after the fork.
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
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include "log.h"
#include "master.h"
#include "metrics.h"
#include "number.h"
#include "timing.h"
#include "worker.h"

/* Handed from one image of the master to the next across an upgrade's
 * exec. Not PAYHOOK_*: those name configuration keys. */
#define ENV_LISTEN_FD "PAYHOOKD_LISTEN_FD"
#define ENV_METRICS_FD "PAYHOOKD_METRICS_FD"
#define ENV_WORKERS "PAYHOOKD_WORKERS"

#define MAX_WORKERS 1024
#define RETIRING_MAX (2 * MAX_WORKERS)
#define RESPAWN_MIN_MS 100
#define RESPAWN_MAX_MS 30000
/* A worker that lived this long did not crash on start: no back-off. */
#define STABLE_MS 5000
#define LISTEN_BACKLOG 1024
#define UPGRADE_CHECK_MS 10000

struct slot {
	pid_t pid;          /* 0: empty, to be filled at respawn_at_ms */
	int64_t started_ms;
	long backoff_ms;
	int64_t respawn_at_ms;
};

struct master {
	const struct master_options *opts;
	struct config *cfg;
	struct metrics *metrics;
	int listen_fd;
	int sigfd;
	bool stopping;
	struct slot slots[MAX_WORKERS];
	pid_t retiring[RETIRING_MAX]; /* asked to leave, not yet reaped */
	size_t retiring_count;
};

static int64_t now_ms(void)
{
	return timing_now_us() / 1000;
}

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
	    chmod(path, (mode_t)mode) != 0 || listen(fd, LISTEN_BACKLOG) != 0) {
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

/* ---- workers ---- */

static void master_release(struct master *m)
{
	if (m->sigfd >= 0)
		close(m->sigfd);
	metrics_free(m->metrics);
	config_cleanup(m->cfg);
}

/* Forks a worker. Returns its PID (0 in the worker itself, which has then
 * already run and sets *worker_status), or -1. */
static pid_t spawn(struct master *m, int *worker_status)
{
	pid_t pid = fork();

	if (pid != 0) {
		if (pid < 0)
			log_error("fork: %s", strerror(errno));
		return pid;
	}
	/* The worker: the socket on descriptor 0, as the FastCGI spec has
	 * it, and none of the master's own descriptors. */
	close(m->sigfd);
	m->sigfd = -1;
	if (m->listen_fd != 0) {
		if (dup2(m->listen_fd, 0) != 0)
			_exit(1);
		close(m->listen_fd);
	}
	*worker_status = worker_run(m->cfg, m->metrics, m->opts->max_requests);
	master_release(m);
	return 0;
}

static void retire(struct master *m, pid_t pid)
{
	if (pid <= 0)
		return;
	if (m->retiring_count < RETIRING_MAX)
		m->retiring[m->retiring_count++] = pid;
	kill(pid, SIGTERM);
}

/* Fills every empty slot whose time has come. Returns 1 in a worker (whose
 * status is in *worker_status), else 0. */
static int fill_slots(struct master *m, int *worker_status)
{
	int64_t now = now_ms();

	for (unsigned i = 0; i < m->opts->workers; i++) {
		struct slot *s = &m->slots[i];
		pid_t pid;

		if (s->pid != 0 || s->respawn_at_ms > now || m->stopping)
			continue;
		pid = spawn(m, worker_status);
		if (pid == 0)
			return 1;
		if (pid < 0) {
			s->respawn_at_ms = now + RESPAWN_MAX_MS;
			continue;
		}
		s->pid = pid;
		s->started_ms = now;
		log_debug("worker %ld started", (long)pid);
	}
	return 0;
}

/* Replaces every worker: the new one first, then the old one is asked to
 * finish its request in hand and leave. Returns 1 in a worker. */
static int replace_all(struct master *m, int *worker_status)
{
	for (unsigned i = 0; i < m->opts->workers; i++) {
		struct slot *s = &m->slots[i];
		pid_t old = s->pid, pid = spawn(m, worker_status);

		if (pid == 0)
			return 1;
		if (pid < 0)
			continue; /* the old one keeps serving */
		s->pid = pid;
		s->started_ms = now_ms();
		s->backoff_ms = 0;
		retire(m, old);
	}
	return 0;
}

static bool take_retiring(struct master *m, pid_t pid)
{
	for (size_t i = 0; i < m->retiring_count; i++) {
		if (m->retiring[i] == pid) {
			m->retiring[i] = m->retiring[--m->retiring_count];
			return true;
		}
	}
	return false;
}

static void describe_exit(int status, char *out, size_t cap)
{
	if (WIFSIGNALED(status))
		snprintf(out, cap, "killed by signal %d", WTERMSIG(status));
	else
		snprintf(out, cap, "exit status %d", WEXITSTATUS(status));
}

/* Reaps every child that ended: a retiring one is gone for good, a slot's
 * is started again, after a back-off when it did not live long. */
static void reap(struct master *m)
{
	int status;
	pid_t pid;

	while ((pid = waitpid(-1, &status, WNOHANG)) > 0) {
		char how[64];

		describe_exit(status, how, sizeof(how));
		metrics_worker_gone(m->metrics, pid);
		if (take_retiring(m, pid)) {
			log_debug("worker %ld left (%s)", (long)pid, how);
			continue;
		}
		for (unsigned i = 0; i < m->opts->workers; i++) {
			struct slot *s = &m->slots[i];
			int64_t lived;
			bool clean;

			if (s->pid != pid)
				continue;
			lived = now_ms() - s->started_ms;
			clean = WIFEXITED(status) && WEXITSTATUS(status) == 0;
			s->pid = 0;
			if (m->stopping)
				break;
			if (lived >= STABLE_MS)
				s->backoff_ms = 0;
			else
				s->backoff_ms = s->backoff_ms == 0 ? RESPAWN_MIN_MS :
					s->backoff_ms * 2 > RESPAWN_MAX_MS ?
					RESPAWN_MAX_MS : s->backoff_ms * 2;
			/* A clean exit (--max-requests) is replaced at once. */
			if (clean)
				s->backoff_ms = 0;
			else
				metrics_worker_restarted(m->metrics);
			s->respawn_at_ms = now_ms() + s->backoff_ms;
			if (clean)
				log_info("worker %ld ended (%s) after %lld ms: "
					 "replaced", (long)pid, how,
					 (long long)lived);
			else
				log_warn("worker %ld ended (%s) after %lld ms: "
					 "restarted in %ld ms", (long)pid, how,
					 (long long)lived, s->backoff_ms);
			break;
		}
	}
}

/* ---- signals: reload, upgrade, stop ---- */

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

/* SIGHUP: a new configuration for new workers, or none at all. */
static int reload(struct master *m, int *worker_status)
{
	struct config next;
	struct error err;

	if (config_load(&next, m->opts->config_path, &err) != 0) {
		log_error("reload refused, the workers keep their "
			  "configuration: %s", err.message);
		metrics_reloaded(m->metrics, false);
		return 0;
	}
	config_cleanup(m->cfg);
	*m->cfg = next;
	apply_logging(m->cfg);
	metrics_reloaded(m->metrics, true);
	log_info("configuration reloaded: replacing %u workers",
		 m->opts->workers);
	return replace_all(m, worker_status);
}

static void clear_cloexec(int fd)
{
	int flags = fcntl(fd, F_GETFD);

	if (flags >= 0)
		fcntl(fd, F_SETFD, flags & ~FD_CLOEXEC);
}

/* Runs the program file with --test-config: the new binary must accept the
 * configuration before it replaces this one. Returns 0 when it does. */
static int new_binary_accepts(const struct master *m)
{
	char *argv[5];
	int argc = 0, status = 0;
	int64_t deadline = now_ms() + UPGRADE_CHECK_MS;
	pid_t pid;

	argv[argc++] = (char *)m->opts->program;
	argv[argc++] = "--test-config";
	if (m->opts->config_path != NULL) {
		argv[argc++] = "-c";
		argv[argc++] = (char *)m->opts->config_path;
	}
	argv[argc] = NULL;
	pid = fork();
	if (pid < 0)
		return -1;
	if (pid == 0) {
		sigset_t none;

		sigemptyset(&none);
		sigprocmask(SIG_SETMASK, &none, NULL);
		execv(argv[0], argv);
		_exit(127);
	}
	while (waitpid(pid, &status, WNOHANG) == 0) {
		if (now_ms() > deadline) {
			kill(pid, SIGKILL);
			waitpid(pid, &status, 0);
			return -1;
		}
		usleep(20000);
	}
	return WIFEXITED(status) && WEXITSTATUS(status) == 0 ? 0 : -1;
}

/* SIGUSR2: exec the program file in place. The PID, the socket, the
 * metrics and the workers (children of this PID either way) carry over;
 * the new image starts its own workers and retires these. */
static void upgrade(struct master *m)
{
	char fd_text[16], metrics_text[16];
	char *pids;
	size_t len = 0, cap = (MAX_WORKERS + RETIRING_MAX) * 12 + 1;

	if (new_binary_accepts(m) != 0) {
		log_error("upgrade refused: %s --test-config failed; the pool "
			  "keeps running", m->opts->program);
		return;
	}
	pids = calloc(1, cap);
	if (pids == NULL) {
		log_error("upgrade refused: out of memory");
		return;
	}
	for (unsigned i = 0; i < m->opts->workers; i++)
		if (m->slots[i].pid > 0)
			len += (size_t)snprintf(pids + len, cap - len, "%s%ld",
						len > 0 ? "," : "",
						(long)m->slots[i].pid);
	for (size_t i = 0; i < m->retiring_count; i++)
		len += (size_t)snprintf(pids + len, cap - len, "%s%ld",
					len > 0 ? "," : "", (long)m->retiring[i]);
	snprintf(fd_text, sizeof(fd_text), "%d", m->listen_fd);
	snprintf(metrics_text, sizeof(metrics_text), "%d",
		 metrics_fd(m->metrics));
	setenv(ENV_LISTEN_FD, fd_text, 1);
	setenv(ENV_METRICS_FD, metrics_text, 1);
	setenv(ENV_WORKERS, pids, 1);
	free(pids);
	clear_cloexec(m->listen_fd);
	clear_cloexec(metrics_fd(m->metrics));
	log_info("upgrading: exec %s", m->opts->program);
	/* The signal mask stays: signals that arrive meanwhile wait for the
	 * new image's signalfd. */
	execv(m->opts->program, m->opts->argv);
	log_error("upgrade failed: exec %s: %s; the pool keeps running",
		  m->opts->program, strerror(errno));
	unsetenv(ENV_LISTEN_FD);
	unsetenv(ENV_METRICS_FD);
	unsetenv(ENV_WORKERS);
}

/* Asks every worker to finish and waits for them, SIGKILL after the
 * longest a request may take. */
static void stop_all(struct master *m)
{
	int64_t deadline = now_ms() + m->cfg->lock_ttl_ms + 5000;
	bool killed = false;

	m->stopping = true;
	for (unsigned i = 0; i < m->opts->workers; i++)
		if (m->slots[i].pid > 0)
			kill(m->slots[i].pid, SIGTERM);
	for (size_t i = 0; i < m->retiring_count; i++)
		kill(m->retiring[i], SIGTERM);
	for (;;) {
		bool left = m->retiring_count > 0;

		reap(m);
		for (unsigned i = 0; i < m->opts->workers && !left; i++)
			left = m->slots[i].pid > 0;
		if (!left)
			break;
		if (!killed && now_ms() > deadline) {
			log_warn("workers still busy after %lld ms: SIGKILL",
				 (long long)(m->cfg->lock_ttl_ms + 5000));
			for (unsigned i = 0; i < m->opts->workers; i++)
				if (m->slots[i].pid > 0)
					kill(m->slots[i].pid, SIGKILL);
			for (size_t i = 0; i < m->retiring_count; i++)
				kill(m->retiring[i], SIGKILL);
			killed = true;
		}
		usleep(20000);
	}
}

/* Workers of the previous image (an upgrade): they are this process's
 * children; retire them once the new ones run. */
static void adopt_old_workers(struct master *m)
{
	const char *list = getenv(ENV_WORKERS);
	char *copy, *save = NULL;

	if (list == NULL)
		return;
	copy = strdup(list);
	for (char *t = copy != NULL ? strtok_r(copy, ",", &save) : NULL;
	     t != NULL; t = strtok_r(NULL, ",", &save)) {
		uint64_t pid;

		if (number_parse(t, INT32_MAX, &pid) == NUMBER_OK && pid > 0)
			retire(m, (pid_t)pid);
	}
	free(copy);
	unsetenv(ENV_WORKERS);
}

static struct metrics *open_metrics(const struct config *cfg,
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
		return metrics_open_file(cfg->metrics_file, err);
	return metrics_new_shared(err);
}

int master_run(const struct master_options *opts, struct config *cfg)
{
	struct master *m = calloc(1, sizeof(*m));
	struct error err = { "" };
	sigset_t mask;
	int worker_status = 0, rc = 0;

	if (m == NULL) {
		fprintf(stderr, "payhook: master: out of memory\n");
		config_cleanup(cfg);
		return 1;
	}
	m->opts = opts;
	m->cfg = cfg;
	m->sigfd = -1;
	sigemptyset(&mask);
	sigaddset(&mask, SIGCHLD);
	sigaddset(&mask, SIGHUP);
	sigaddset(&mask, SIGTERM);
	sigaddset(&mask, SIGINT);
	sigaddset(&mask, SIGUSR2);
	if (sigprocmask(SIG_BLOCK, &mask, NULL) != 0 ||
	    (m->sigfd = signalfd(-1, &mask, SFD_CLOEXEC)) < 0) {
		error_set(&err, "signalfd: %s", strerror(errno));
		goto fail;
	}
	signal(SIGPIPE, SIG_IGN);
	m->listen_fd = find_listen_fd(opts, &err);
	if (m->listen_fd < 0)
		goto fail;
	unsetenv(ENV_LISTEN_FD);
	m->metrics = open_metrics(cfg, &err);
	if (m->metrics == NULL)
		goto fail;
	adopt_old_workers(m);
	log_info("master %ld: %u workers (configuration %s)", (long)getpid(),
		 opts->workers,
		 opts->config_path != NULL ? opts->config_path : "from the "
								 "environment");

	while (!m->stopping) {
		struct pollfd pfd = { .fd = m->sigfd, .events = POLLIN };
		struct signalfd_siginfo si;
		int64_t wait_ms = -1, now;

		if (fill_slots(m, &worker_status) != 0)
			goto worker;
		now = now_ms();
		for (unsigned i = 0; i < opts->workers; i++)
			if (m->slots[i].pid == 0) {
				int64_t w = m->slots[i].respawn_at_ms - now;

				if (wait_ms < 0 || w < wait_ms)
					wait_ms = w < 0 ? 0 : w;
			}
		if (poll(&pfd, 1, (int)(wait_ms < 0 ? -1 : wait_ms)) < 0 &&
		    errno != EINTR) {
			error_set(&err, "poll: %s", strerror(errno));
			goto fail;
		}
		if (!(pfd.revents & POLLIN))
			continue;
		if (read(m->sigfd, &si, sizeof(si)) != (ssize_t)sizeof(si))
			continue;
		switch (si.ssi_signo) {
		case SIGCHLD:
			reap(m);
			break;
		case SIGHUP:
			if (reload(m, &worker_status) != 0)
				goto worker;
			break;
		case SIGUSR2:
			upgrade(m);
			break;
		case SIGTERM:
		case SIGINT:
			log_info("master %ld: signal %u, stopping the workers",
				 (long)getpid(), si.ssi_signo);
			stop_all(m);
			break;
		default:
			break;
		}
	}
	log_info("master %ld: stopped", (long)getpid());
	master_release(m);
	free(m);
	return rc;
worker:
	free(m);
	return worker_status;
fail:
	fprintf(stderr, "payhook: master cannot start: %s\n", err.message);
	log_error("master cannot start: %s", err.message);
	master_release(m);
	free(m);
	return 1;
}
