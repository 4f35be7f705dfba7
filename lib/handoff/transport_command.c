/* transport_command.c - the command backend of transport.h: /bin/sh -c
 * COMMAND per attempt in a process group of its own, the body on its
 * standard input, the key in its environment, killed at the timeout. */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "timing.h"
#include "transport_command.h"

extern char **environ;

/* How often a command's exit is looked for when its output stays open (a
 * background child of it may hold the pipe). */
#define CHILD_TICK_MS 50
/* ... and once its output is closed, when only its exit is left to see. */
#define CHILD_EXIT_TICK_MS 2
/* Highest descriptor closed in a command's process without close_range. */
#define FD_CLOSE_MAX 65536L

struct command {
	struct transport base;            /* first: a struct transport * */
	struct transport_options options;
	long fd_max;                      /* descriptors a command must not get */
};

/* A new environment for a command: this one without any PAYHOOK_* variable
 * (they may hold secrets), plus PAYHOOK_IDEMPOTENCY_KEY=key. The array is
 * freed with free(); its last-but-one string (*key_var) too. Returns NULL
 * when out of memory. */
static char **command_env_new(const struct transport_options *o,
			      const char *key, char **key_var)
{
	size_t count = 0, used = 0;
	char **env;

	for (char **e = environ; e != NULL && *e != NULL; e++)
		count++;
	size_t var_len = strlen(o->key_variable) + strlen(key) + 1;

	env = calloc(count + 2, sizeof(*env));
	*key_var = malloc(var_len);
	if (env == NULL || *key_var == NULL) {
		free(env);
		free(*key_var);
		*key_var = NULL;
		return NULL;
	}
	for (char **e = environ; e != NULL && *e != NULL; e++) {
		if (strncmp(*e, o->env_prefix, strlen(o->env_prefix)) != 0)
			env[used++] = *e;
	}
	snprintf(*key_var, var_len, "%s%s", o->key_variable, key);
	env[used++] = *key_var;
	env[used] = NULL;
	return env;
}

/* In the forked child: its own process group (so a timeout kills whatever it
 * started), the pipes on 0/1/2, nothing else open, default signals, then
 * /bin/sh -c command. Only async-signal-safe calls. Never returns. */
_Noreturn static void run_child(const struct command *h, int in_fd, int out_fd,
				char **env)
{
	static const char failed[] = ": cannot run /bin/sh\n";
	char *argv[] = { "sh", "-c", (char *)h->options.command, NULL };
	struct sigaction dfl;
	sigset_t none;

	setpgid(0, 0);
	memset(&dfl, 0, sizeof(dfl));
	dfl.sa_handler = SIG_DFL;
	sigemptyset(&dfl.sa_mask);
	/* Ignored signals (SIGPIPE) and a blocked mask survive exec. */
	for (int sig = 1; sig < NSIG; sig++)
		sigaction(sig, &dfl, NULL);
	sigemptyset(&none);
	sigprocmask(SIG_SETMASK, &none, NULL);
	if (dup2(in_fd, STDIN_FILENO) < 0 || dup2(out_fd, STDOUT_FILENO) < 0 ||
	    dup2(out_fd, STDERR_FILENO) < 0)
		_exit(126);
	/* The MySQL connection, kept-alive sockets and log file stay ours. */
#ifdef HAVE_CLOSE_RANGE
	if (close_range(3, ~0U, 0) != 0)
#endif
	{
		for (long fd = 3; fd < h->fd_max; fd++)
			close((int)fd);
	}
	execve("/bin/sh", argv, env);
	if (write(STDERR_FILENO, h->options.program,
		  strlen(h->options.program)) < 0 ||
	    write(STDERR_FILENO, failed, sizeof(failed) - 1) < 0) {
		/* nothing left to tell */
	}
	_exit(127);
}

static int64_t ms_left(int64_t deadline_us)
{
	int64_t left = (deadline_us - timing_now_us() + 999) / 1000;

	return left > 0 ? left : 0;
}

/* Reads what is there from fd into the kept output. Returns 0 while the
 * pipe is open, 1 at its end (or on an error). */
static int read_output(int fd, char *kept, size_t *kept_len)
{
	char buf[4096];

	for (;;) {
		ssize_t n = read(fd, buf, sizeof(buf));

		if (n > 0) {
			size_t room = TRANSPORT_OUTPUT_KEEP - *kept_len;
			size_t take = (size_t)n < room ? (size_t)n : room;

			memcpy(kept + *kept_len, buf, take);
			*kept_len += take;
			continue;
		}
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0 && errno == EAGAIN)
			return 0;
		return 1;
	}
}

/* Ends a command that outlasted its time: SIGTERM to its process group,
 * TRANSPORT_KILL_GRACE_MS to go, then SIGKILL. Reaps it into *status. */
static void kill_command(pid_t pid, int *status)
{
	int64_t deadline = timing_now_us() + TRANSPORT_KILL_GRACE_MS * 1000;
	const struct timespec tick = { 0, 10 * 1000 * 1000 };

	kill(-pid, SIGTERM);
	kill(-pid, SIGCONT);
	while (timing_now_us() < deadline) {
		pid_t got = waitpid(pid, status, WNOHANG);

		if (got == pid) {
			/* What it started may linger: the group goes too. */
			kill(-pid, SIGKILL);
			return;
		}
		if (got < 0 && errno != EINTR)
			return;
		nanosleep(&tick, NULL);
	}
	kill(-pid, SIGKILL);
	while (waitpid(pid, status, 0) < 0 && errno == EINTR) {
	}
}

static int command_send(struct transport *t, const char *key,
			const char *body, size_t body_len,
			struct transport_outcome *out, struct error *err)
{
	struct command *h = (struct command *)t;
	int64_t deadline = timing_now_us() +
			   (int64_t)h->options.timeout_ms * 1000;
	int in[2] = { -1, -1 }, outp[2] = { -1, -1 };
	char kept[TRANSPORT_OUTPUT_KEEP + 1];
	size_t kept_len = 0, written = 0;
	char *key_var = NULL;
	char **env;
	pid_t pid;
	int status = 0, result = -1;
	bool exited = false;

	env = command_env_new(&h->options, key, &key_var);
	if (env == NULL) {
		error_set(err, "transport: out of memory building the command's "
			  "environment");
		goto fail;
	}
	if (pipe2(in, O_CLOEXEC) != 0 || pipe2(outp, O_CLOEXEC) != 0) {
		error_set(err, "transport: pipe: %s", strerror(errno));
		goto fail;
	}
	pid = fork();
	if (pid < 0) {
		error_set(err, "transport: fork: %s", strerror(errno));
		goto fail;
	}
	if (pid == 0)
		run_child(h, in[0], outp[1], env);
	/* Both sides set the group, so kill(-pid) works whoever runs first
	 * (after its exec the child's own call has happened). */
	setpgid(pid, pid);
	close(in[0]);
	close(outp[1]);
	in[0] = outp[1] = -1;
	fcntl(in[1], F_SETFL, fcntl(in[1], F_GETFL) | O_NONBLOCK);
	fcntl(outp[0], F_SETFL, fcntl(outp[0], F_GETFL) | O_NONBLOCK);
	if (body_len == 0) {
		close(in[1]);
		in[1] = -1;
	}

	while (!exited) {
		struct pollfd fds[2];
		nfds_t n = 0;
		int64_t left = ms_left(deadline), tick;
		pid_t got;

		got = waitpid(pid, &status, WNOHANG);
		if (got == pid) {
			exited = true;
			break;
		}
		if (left == 0)
			break;
		if (in[1] >= 0)
			fds[n++] = (struct pollfd){ .fd = in[1], .events = POLLOUT };
		if (outp[0] >= 0)
			fds[n++] = (struct pollfd){ .fd = outp[0], .events = POLLIN };
		/* Once its output is closed, only its exit is left to see:
		 * look often. */
		tick = outp[0] >= 0 ? CHILD_TICK_MS : CHILD_EXIT_TICK_MS;
		if (poll(fds, n, (int)(left < tick ? left : tick)) < 0 &&
		    errno != EINTR)
			break;
		if (in[1] >= 0) {
			ssize_t w = write(in[1], body + written, body_len - written);

			if (w > 0)
				written += (size_t)w;
			/* EPIPE: it does not read its input; its exit
			 * status still decides. */
			if ((w < 0 && errno != EAGAIN && errno != EINTR) ||
			    written == body_len) {
				close(in[1]);
				in[1] = -1;
			}
		}
		if (outp[0] >= 0 && read_output(outp[0], kept, &kept_len) != 0) {
			close(outp[0]);
			outp[0] = -1;
		}
	}
	if (!exited) {
		kill_command(pid, &status);
		out->timed_out = true;
	}
	if (outp[0] >= 0)
		read_output(outp[0], kept, &kept_len);
	kept[kept_len] = '\0';
	result = 0;

	{
		char prefix[96];

		if (out->timed_out) {
			snprintf(prefix, sizeof(prefix),
				 "timed out after %ld ms: killed%s",
				 h->options.timeout_ms,
				 kept_len > 0 ? ": " : "");
			out->exit_status = -1;
			if (WIFSIGNALED(status))
				out->term_signal = WTERMSIG(status);
		} else if (WIFEXITED(status)) {
			out->exit_status = WEXITSTATUS(status);
			out->delivered = out->exit_status == 0;
			snprintf(prefix, sizeof(prefix), "exit status %d%s%s",
				 out->exit_status,
				 out->exit_status == 127 ? " (command not found?)"
							 : "",
				 kept_len > 0 ? ": " : "");
		} else {
			out->exit_status = -1;
			out->term_signal = WIFSIGNALED(status) ? WTERMSIG(status)
							       : 0;
			snprintf(prefix, sizeof(prefix), "killed by signal %d%s",
				 out->term_signal, kept_len > 0 ? ": " : "");
		}
		transport_detail_set(out, prefix, kept, kept_len);
	}
	goto out;
fail:
	transport_detail_set(out, err->message, "", 0);
out:
	for (int i = 0; i < 2; i++) {
		if (in[i] >= 0)
			close(in[i]);
		if (outp[i] >= 0)
			close(outp[i]);
	}
	free(env);
	free(key_var);
	return result;
}

static void command_free(struct transport *t)
{
	free(t);
}

struct transport *transport_command_new(const struct transport_options *options,
					struct error *err)
{
	struct command *h = calloc(1, sizeof(*h));
	long open_max;

	if (h == NULL) {
		error_set(err, "transport: out of memory");
		return NULL;
	}
	h->base.send = command_send;
	h->base.free = command_free;
	h->options = *options;
	open_max = sysconf(_SC_OPEN_MAX);
	h->fd_max = open_max > 0 && open_max < FD_CLOSE_MAX ? open_max
							    : FD_CLOSE_MAX;
	return &h->base;
}
