/* signals.c - the signals a program serves, blocked and read from a
 * signalfd in its wait (see signals.h).
 */
#include "config.h"

#include <errno.h>
#include <signal.h>
#include <string.h>
#include <sys/signalfd.h>
#include <unistd.h>

#include "log.h"
#include "signals.h"

static int signal_fd = -1;
static sigset_t served;      /* the set the descriptor reads */
static sigset_t saved_mask;  /* the mask before the first signals_open */
static int stop_signal;      /* the first stop signal taken; 0: none */

int signals_open(const int *list, struct error *err)
{
	struct sigaction sa;
	sigset_t set, before;
	int fd;

	memset(&sa, 0, sizeof(sa));
	sigemptyset(&sa.sa_mask);
	set = served;
	if (signal_fd < 0)
		sigemptyset(&set);
	for (size_t i = 0; list[i] != 0; i++)
		sigaddset(&set, list[i]);
	if (sigprocmask(SIG_BLOCK, &set, &before) != 0)
		return error_set(err, "signals: sigprocmask: %s",
				 strerror(errno));
	fd = signalfd(signal_fd, &set, SFD_CLOEXEC | SFD_NONBLOCK);
	if (fd < 0) {
		error_set(err, "signals: signalfd: %s", strerror(errno));
		sigprocmask(SIG_SETMASK, &before, NULL);
		return -1;
	}
	sa.sa_handler = SIG_DFL;
	for (size_t i = 0; list[i] != 0; i++)
		sigaction(list[i], &sa, NULL);
	sa.sa_handler = SIG_IGN;
	sigaction(SIGPIPE, &sa, NULL);
	if (signal_fd < 0)
		saved_mask = before;
	signal_fd = fd;
	served = set;
	return 0;
}

int signals_fd(void)
{
	return signal_fd;
}

int signals_next(void)
{
	struct signalfd_siginfo si;

	if (signal_fd < 0 ||
	    read(signal_fd, &si, sizeof(si)) != (ssize_t)sizeof(si))
		return 0;
	return (int)si.ssi_signo;
}

void signals_reopen_log(void)
{
	struct error err;

	if (log_reopen(&err) != 0)
		log_error("%s", err.message);
}

bool signals_stopping(void)
{
	int signo;

	while ((signo = signals_next()) != 0) {
		if (signo == SIGTERM || signo == SIGINT || signo == SIGQUIT) {
			if (stop_signal == 0)
				stop_signal = signo;
		} else if (signo == SIGHUP) {
			signals_reopen_log();
		}
	}
	return stop_signal != 0;
}

int signals_stop_signal(void)
{
	return stop_signal;
}

int signals_wait(struct pollfd *fds, size_t n, long ms)
{
	struct pollfd all[SIGNALS_WAIT_MAX + 1];
	int ready;

	if (n > SIGNALS_WAIT_MAX) {
		errno = EINVAL;
		return -1;
	}
	if (n > 0) /* fds may be NULL then: memcpy wants a pointer */
		memcpy(all, fds, n * sizeof(*fds));
	all[n] = (struct pollfd){ .fd = signal_fd, .events = POLLIN };
	ready = poll(all, (nfds_t)n + 1, ms < 0 ? -1 : ms > 3600000 ? 3600000
							     : (int)ms);
	if (ready < 0)
		return errno == EINTR ? 0 : -1;
	for (size_t i = 0; i < n; i++)
		fds[i].revents = all[i].revents;
	if (all[n].revents != 0) {
		ready--;
		signals_stopping();
	}
	return ready;
}

void signals_close(void)
{
	if (signal_fd < 0)
		return;
	close(signal_fd);
	signal_fd = -1;
	stop_signal = 0;
	sigprocmask(SIG_SETMASK, &saved_mask, NULL);
}
