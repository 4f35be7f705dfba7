/* tcpproxy.c - test helper: a single-process TCP proxy on 127.0.0.1 for
 * fault-injection tests. The harness puts it between payhook's workers and a
 * backend (Redis, MariaDB) and drives it over a control socket to switch the
 * target, delay, stall or cut the traffic, refuse connections or play a
 * silent server.
 *
 *   tcpproxy --target HOST:PORT [--control PATH|-]
 *   tcpproxy --send PATH COMMAND...
 *
 * Prints the kernel-chosen listening port and a newline on stdout, then serves
 * until SIGTERM/SIGINT. Control commands, one per line, one reply line each
 * ("ok..." or "error: ..."), on a unix socket at PATH (mode 0600) or, with
 * "--control -", on stdin with replies on stdout:
 *   target HOST:PORT   new connections go there (existing ones keep theirs)
 *   delay MS           hold every relayed chunk MS ms (0 = off)
 *   stall on|off       relay nothing while on; connections stay open
 *   drop               reset every current connection pair (both sides)
 *   refuse on|off      accept new connections and close them at once
 *   blackhole on|off   accept new connections, never connect nor answer
 *   stats              ok connections=N accepted=N bytes_up=N bytes_down=N
 * Targets are IPv4 (test backends listen on 127.0.0.1).
 *
 * --send is the client for shell scripts, which cannot open a unix socket:
 * it sends each COMMAND on one connection to the control socket PATH, prints
 * each reply line, and exits 0 when every reply starts with "ok", 1 otherwise
 * (an error reply, no proxy, or no reply within 10 s).
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE 1 /* accept4, SOCK_NONBLOCK */
#endif

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/resource.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/time.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#define BUF_CAP (64 * 1024)  /* bytes buffered per direction per pair */
#define NCHUNK 32            /* arrival timestamps kept per direction */
#define MAX_CTL 16           /* control connections (+1 slot for stdin) */
#define CTL_LINE 512         /* longest control command */
#define MAX_DELAY_MS 600000  /* 10 minutes: anything longer is a typo */
#define MAX_EVENTS 64

enum kind { K_LISTEN, K_SIGNAL, K_CTL_LISTEN, K_CTL, K_CLIENT, K_UPSTREAM };

/* First member of everything registered with epoll (data.ptr points to it). */
struct tag {
	enum kind kind;
	int fd;
	uint32_t mask; /* registered events; 0 = not in epoll at all */
};

/* One direction of a pair: bytes read from a source, waiting for its sink. */
struct dir {
	char buf[BUF_CAP];
	size_t off, len;  /* pending bytes are buf[off..len) */
	uint64_t in, out; /* stream offsets read / written so far */
	struct { uint64_t end; int64_t at; } ch[NCHUNK]; /* ring: bytes before
				 * `end` arrived at `at` (monotonic ms) */
	unsigned ch_head, ch_n;
	int64_t eof_at;   /* when the source's EOF was read; -1 = not yet */
	bool shut;        /* shutdown(SHUT_WR) done on the sink */
	unsigned long long *counter; /* global byte count for this way */
};

struct pair;
struct side { struct tag t; struct pair *p; };

struct pair {
	struct side cl, up;
	struct dir c2u, u2c;
	bool connecting, blackhole, dead;
	char target[32];
	struct pair *prev, *next;
};

struct ctl {
	struct tag t;
	char line[CTL_LINE];
	size_t len;
	bool overflow; /* discarding a too-long line up to its newline */
	bool is_stdin; /* replies go to stdout */
	bool dead;
};

static struct {
	int ep, spare_fd;
	struct tag lsn, sig, ctl_lsn;
	const char *ctl_path; /* unix socket to unlink at exit, or NULL */
	struct sockaddr_in target;
	char target_name[32];
	int64_t delay_ms;
	bool stall, refuse, blackhole, quit;
	struct pair *pairs, *grave; /* closed pairs are freed after the batch */
	struct ctl *ctls[MAX_CTL + 1];
	unsigned long long nconn, accepted, bytes_up, bytes_down;
} g;

static void logmsg(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* stderr is made line-buffered in main: one write() per line, so lines of
 * processes sharing it stay whole. */
static void logmsg(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	fprintf(stderr, "tcpproxy[%ld]: ", (long)getpid());
	vfprintf(stderr, fmt, ap);
	fputc('\n', stderr);
	va_end(ap);
}

static void fatal(const char *what)
{
	logmsg("%s: %s", what, strerror(errno));
	exit(1);
}

static int64_t now_ms(void)
{
	struct timespec ts;

	if (clock_gettime(CLOCK_MONOTONIC, &ts) != 0)
		fatal("clock_gettime");
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static void xclose(int fd)
{
	if (fd >= 0 && close(fd) != 0)
		logmsg("close fd %d: %s", fd, strerror(errno));
}

/* rst: SO_LINGER 0 makes close() send RST, so the peer sees a reset. */
static void close_fd(int fd, bool rst)
{
	struct linger lg = { 1, 0 };

	if (fd >= 0 && rst && setsockopt(fd, SOL_SOCKET, SO_LINGER, &lg, sizeof lg) != 0)
		logmsg("SO_LINGER: %s", strerror(errno));
	xclose(fd); /* also takes it out of epoll */
}

/* Small request/reply traffic must not wait for Nagle, or delays skew. */
static void set_nodelay(int fd)
{
	int one = 1;

	if (setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one) != 0)
		logmsg("TCP_NODELAY: %s", strerror(errno));
}

/* Registers, changes or removes an fd's epoll interest. An fd with nothing
 * to wait for leaves epoll altogether: epoll would keep reporting HUP/ERR on
 * it otherwise, a busy loop while stalled. */
static int set_events(struct tag *t, uint32_t want)
{
	struct epoll_event ev = { .events = want, .data.ptr = t };
	int op = !t->mask ? EPOLL_CTL_ADD : !want ? EPOLL_CTL_DEL : EPOLL_CTL_MOD;

	if (want == t->mask)
		return 0;
	if (epoll_ctl(g.ep, op, t->fd, &ev) != 0) {
		int saved = errno; /* ctl_add looks at it */

		logmsg("epoll_ctl fd %d: %s", t->fd, strerror(errno));
		errno = saved;
		return -1;
	}
	t->mask = want;
	return 0;
}

/* ---- relaying ------------------------------------------------------------ */

static size_t pending(const struct dir *d) { return d->len - d->off; }

#define CH(d, i) ((d)->ch[((d)->ch_head + (i)) % NCHUNK])

/* Records the arrival of the bytes just read. Merging into the last record
 * (same millisecond, or ring full) stamps it with the newer time, which can
 * only hold bytes longer than asked, never shorter. */
static void chunk_push(struct dir *d, int64_t now)
{
	if (d->ch_n > 0 && (CH(d, d->ch_n - 1).at == now || d->ch_n == NCHUNK)) {
		CH(d, d->ch_n - 1).end = d->in;
		CH(d, d->ch_n - 1).at = now;
		return;
	}
	CH(d, d->ch_n).end = d->in;
	CH(d, d->ch_n).at = now;
	d->ch_n++;
}

/* Number of pending bytes that have waited long enough to be written. */
static size_t releasable(const struct dir *d, int64_t now)
{
	uint64_t end = d->out;

	if (g.delay_ms == 0)
		return pending(d);
	for (unsigned i = 0; i < d->ch_n && CH(d, i).at + g.delay_ms <= now; i++)
		end = CH(d, i).end;
	return (size_t)(end - d->out);
}

/* When the next held chunk (or held EOF) of d falls due; INT64_MAX if none. */
static int64_t dir_due(const struct dir *d, int64_t now)
{
	for (unsigned i = 0; i < d->ch_n; i++)
		if (CH(d, i).at + g.delay_ms > now)
			return CH(d, i).at + g.delay_ms;
	if (d->eof_at >= 0 && !d->shut && d->eof_at + g.delay_ms > now)
		return d->eof_at + g.delay_ms;
	return INT64_MAX;
}

static const char *side_name(const struct side *s)
{
	return s->t.kind == K_CLIENT ? "client" : "upstream";
}

/* Reads what fits from src into d. Returns -1 when the source failed. */
static int dir_fill(struct dir *d, struct side *src, int64_t now)
{
	if (d->off > 0 && d->len > BUF_CAP / 2) { /* compact rarely */
		memmove(d->buf, d->buf + d->off, pending(d));
		d->len -= d->off;
		d->off = 0;
	}
	if (d->len == BUF_CAP)
		return 0;
	ssize_t r = read(src->t.fd, d->buf + d->len, BUF_CAP - d->len);
	if (r < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR))
		return 0;
	if (r < 0) {
		logmsg("read from %s: %s", side_name(src), strerror(errno));
		return -1;
	}
	if (r == 0) {
		d->eof_at = now;
		return 0;
	}
	d->len += (size_t)r;
	d->in += (uint64_t)r;
	chunk_push(d, now);
	return 0;
}

/* Writes what is due from d to sink. Returns -1 when the sink failed. */
static int dir_flush(struct dir *d, struct side *sink, int64_t now)
{
	size_t n = releasable(d, now);

	if (n == 0)
		return 0;
	ssize_t w = send(sink->t.fd, d->buf + d->off, n, MSG_NOSIGNAL);
	if (w < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR))
		return 0;
	if (w < 0) {
		logmsg("write to %s: %s", side_name(sink), strerror(errno));
		return -1;
	}
	d->off += (size_t)w;
	d->out += (uint64_t)w;
	*d->counter += (unsigned long long)w;
	while (d->ch_n > 0 && CH(d, 0).end <= d->out) {
		d->ch_head = (d->ch_head + 1) % NCHUNK;
		d->ch_n--;
	}
	if (d->off == d->len)
		d->off = d->len = 0;
	return 0;
}

/* Passes the source's EOF on once everything before it has been written. */
static int half_close(struct dir *d, struct side *sink, int64_t now)
{
	if (d->eof_at < 0 || d->shut || pending(d) > 0 || d->eof_at + g.delay_ms > now)
		return 0;
	if (shutdown(sink->t.fd, SHUT_WR) != 0) {
		if (errno != ENOTCONN) /* ENOTCONN: the sink has gone already */
			logmsg("shutdown %s: %s", side_name(sink), strerror(errno));
		return -1;
	}
	d->shut = true;
	return 0;
}

/* The memory is freed after the current epoll batch, which may still hold
 * events pointing at it. */
static void close_pair(struct pair *p, bool rst)
{
	close_fd(p->cl.t.fd, rst);
	close_fd(p->up.t.fd, rst);
	p->cl.t.fd = p->up.t.fd = -1;
	if (p->prev)
		p->prev->next = p->next;
	else
		g.pairs = p->next;
	if (p->next)
		p->next->prev = p->prev;
	p->dead = true;
	p->next = g.grave;
	g.grave = p;
	g.nconn--;
}

/* Recomputes what each side waits for, passes due half-closes on and closes
 * the pair once both directions are finished. */
static void pair_update(struct pair *p, int64_t now)
{
	uint32_t cw = 0, uw = 0;

	if (p->blackhole) {
		cw = EPOLLIN; /* only to notice the client leaving */
	} else if (p->connecting) {
		uw = EPOLLOUT;
	} else if (!g.stall) {
		bool bad = half_close(&p->c2u, &p->up, now) || half_close(&p->u2c, &p->cl, now);

		if (bad || (p->c2u.shut && p->u2c.shut)) {
			close_pair(p, bad); /* failed: reset; finished: plain close */
			return;
		}
		/* Backpressure: a side is read only while its buffer has room. */
		if (p->c2u.eof_at < 0 && pending(&p->c2u) < BUF_CAP)
			cw |= EPOLLIN;
		if (p->u2c.eof_at < 0 && pending(&p->u2c) < BUF_CAP)
			uw |= EPOLLIN;
		if (releasable(&p->u2c, now) > 0)
			cw |= EPOLLOUT;
		if (releasable(&p->c2u, now) > 0)
			uw |= EPOLLOUT;
	}
	if (set_events(&p->cl.t, cw) || (p->up.t.fd >= 0 && set_events(&p->up.t, uw)))
		close_pair(p, true);
}

/* Re-arms every pair (after stall/delay changes, and on each loop turn while
 * a delay is set) and returns the epoll timeout until held data falls due. */
static int update_all(int64_t now)
{
	int64_t first = INT64_MAX;

	for (struct pair *p = g.pairs, *next; p; p = next) {
		next = p->next; /* pair_update may unlink p */
		pair_update(p, now);
		if (!p->dead && g.delay_ms > 0 && !g.stall && !p->connecting && !p->blackhole) {
			int64_t a = dir_due(&p->c2u, now), b = dir_due(&p->u2c, now);

			first = a < first ? a : first;
			first = b < first ? b : first;
		}
	}
	return first == INT64_MAX ? -1 : first - now > 60000 ? 60000 : (int)(first - now);
}

static void start_pair(int fd, int64_t now)
{
	struct pair *p = calloc(1, sizeof *p);
	int rc;

	if (!p) {
		logmsg("out of memory for a connection");
		close_fd(fd, true);
		return;
	}
	p->cl = (struct side){ { K_CLIENT, fd, 0 }, p };
	p->up = (struct side){ { K_UPSTREAM, -1, 0 }, p };
	p->c2u.eof_at = p->u2c.eof_at = -1;
	p->c2u.counter = &g.bytes_up;
	p->u2c.counter = &g.bytes_down;
	memcpy(p->target, g.target_name, sizeof p->target);
	if ((p->next = g.pairs))
		g.pairs->prev = p;
	g.pairs = p;
	g.nconn++;
	if ((p->blackhole = g.blackhole)) {
		pair_update(p, now);
		return;
	}
	set_nodelay(fd);
	p->up.t.fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (p->up.t.fd < 0) {
		logmsg("socket: %s", strerror(errno));
		close_pair(p, true);
	} else if ((rc = connect(p->up.t.fd, (struct sockaddr *)&g.target, sizeof g.target)) == 0 ||
		   errno == EINPROGRESS) {
		p->connecting = rc != 0; /* loopback may connect at once */
		if (!p->connecting)
			set_nodelay(p->up.t.fd);
		pair_update(p, now);
	} else {
		logmsg("connect to %s: %s", p->target, strerror(errno));
		close_pair(p, true);
	}
}

static void on_accept(int64_t now)
{
	for (int i = 0; i < MAX_EVENTS; i++) { /* bounded: others get a turn */
		int fd = accept4(g.lsn.fd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);

		if (fd < 0 && (errno == EINTR || errno == ECONNABORTED))
			continue;
		if (fd < 0 && (errno == EMFILE || errno == ENFILE) && g.spare_fd >= 0) {
			/* Shed the waiting client with the spare fd, or
			 * level-triggered epoll would spin on it. */
			xclose(g.spare_fd);
			xclose(accept(g.lsn.fd, NULL, NULL));
			g.spare_fd = open("/dev/null", O_RDONLY | O_CLOEXEC);
			logmsg("out of file descriptors: closed a new connection");
			return;
		}
		if (fd < 0) {
			if (errno != EAGAIN && errno != EWOULDBLOCK)
				logmsg("accept: %s", strerror(errno));
			return;
		}
		g.accepted++;
		if (!g.refuse) {
			start_pair(fd, now);
		} else {
			close_fd(fd, true);
			logmsg("refused a connection");
		}
	}
}

static void on_pair_event(struct side *s, uint32_t ev, int64_t now)
{
	struct pair *p = s->p;
	bool is_cl = s == &p->cl;
	struct dir *from = is_cl ? &p->c2u : &p->u2c; /* filled by reading s */
	struct dir *to = is_cl ? &p->u2c : &p->c2u;   /* drained into s */
	int err = 0;
	socklen_t len = sizeof err;

	if (p->dead)
		return; /* closed earlier in this batch */
	if (p->blackhole) {
		char sink[4096];
		ssize_t r = read(s->t.fd, sink, sizeof sink);

		if (r == 0 || (r < 0 && errno != EAGAIN && errno != EINTR))
			close_pair(p, r < 0);
		return;
	}
	if ((p->connecting && !is_cl) || (ev & EPOLLERR)) {
		if (getsockopt(s->t.fd, SOL_SOCKET, SO_ERROR, &err, &len) != 0)
			err = errno;
		if (err || (ev & EPOLLERR)) {
			if (p->connecting)
				logmsg("connect to %s: %s", p->target, strerror(err));
			else
				logmsg("%s: %s", side_name(s), err ? strerror(err) : "error");
			close_pair(p, true);
			return;
		}
		if (p->connecting) {
			p->connecting = false;
			set_nodelay(s->t.fd);
			pair_update(p, now);
			return;
		}
	}
	/* Having read, forward at once rather than after another epoll round. */
	bool fail = (ev & (EPOLLIN | EPOLLHUP)) && (s->t.mask & EPOLLIN) &&
		    (dir_fill(from, s, now) || dir_flush(from, is_cl ? &p->up : &p->cl, now));

	if (!fail && (ev & EPOLLOUT))
		fail = dir_flush(to, s, now) != 0;
	if (fail)
		close_pair(p, true);
	else
		pair_update(p, now);
}

/* ---- control --------------------------------------------------------------- */

/* "HOST:PORT" (IPv4 address or name) to g.target. */
static int resolve(const char *spec, char *err, size_t errsz)
{
	struct addrinfo hints = { .ai_family = AF_INET, .ai_socktype = SOCK_STREAM }, *res;
	char host[64], addr[INET_ADDRSTRLEN], extra;
	unsigned port;
	int rc;

	if (sscanf(spec, "%63[^:]:%5u%c", host, &port, &extra) != 2 || port < 1 || port > 65535) {
		snprintf(err, errsz, "expected HOST:PORT");
		return -1;
	}
	if ((rc = getaddrinfo(host, NULL, &hints, &res)) != 0) {
		snprintf(err, errsz, "cannot resolve %s: %s", host, gai_strerror(rc));
		return -1;
	}
	memcpy(&g.target, res->ai_addr, sizeof g.target);
	g.target.sin_port = htons((uint16_t)port);
	freeaddrinfo(res);
	if (!inet_ntop(AF_INET, &g.target.sin_addr, addr, sizeof addr))
		snprintf(addr, sizeof addr, "?");
	snprintf(g.target_name, sizeof g.target_name, "%s:%u", addr, port);
	return 0;
}

static void ctl_close(struct ctl *c)
{
	xclose(c->t.fd); /* stdin too: nothing else reads it */
	c->t.fd = -1;
	c->dead = true; /* freed after the batch */
}

static void ctl_reply(struct ctl *c, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* A reply line fits any socket or pipe buffer; a client that lets replies
 * pile up is dropped rather than buffered without bound. */
static void ctl_reply(struct ctl *c, const char *fmt, ...)
{
	char buf[256];
	va_list ap;

	va_start(ap, fmt);
	int n = vsnprintf(buf, sizeof buf - 1, fmt, ap);
	va_end(ap);
	n = n < 0 ? 0 : n > (int)sizeof buf - 2 ? (int)sizeof buf - 2 : n;
	buf[n++] = '\n';
	ssize_t w = c->is_stdin ? write(STDOUT_FILENO, buf, (size_t)n)
				: send(c->t.fd, buf, (size_t)n, MSG_NOSIGNAL | MSG_DONTWAIT);
	if (w != n) {
		logmsg("control reply: %s", w < 0 ? strerror(errno) : "short write");
		ctl_close(c);
	}
}

static void run_command(struct ctl *c, char *line, int64_t now)
{
	char *save = NULL, *end, err[256];
	char *verb = strtok_r(line, " \t\r", &save);
	char *arg = strtok_r(NULL, " \t\r", &save);
	bool *flag = NULL;
	unsigned n = 0;

	if (!verb)
		return; /* blank line: not a command */
	logmsg("control: %s%s%s", verb, arg ? " " : "", arg ? arg : "");
	if (strtok_r(NULL, " \t\r", &save)) {
		ctl_reply(c, "error: too many arguments");
	} else if (!strcmp(verb, "stats") && !arg) {
		ctl_reply(c, "ok connections=%llu accepted=%llu bytes_up=%llu bytes_down=%llu",
			  g.nconn, g.accepted, g.bytes_up, g.bytes_down);
	} else if (!strcmp(verb, "drop") && !arg) {
		for (; g.pairs; n++)
			close_pair(g.pairs, true);
		logmsg("dropped %u connections", n);
		ctl_reply(c, "ok");
	} else if (!strcmp(verb, "target") && arg) {
		if (resolve(arg, err, sizeof err) != 0) {
			ctl_reply(c, "error: %s", err);
		} else {
			logmsg("new connections go to %s", g.target_name);
			ctl_reply(c, "ok");
		}
	} else if (!strcmp(verb, "delay") && arg) {
		errno = 0;
		long ms = strtol(arg, &end, 10);
		if (errno || end == arg || *end || ms < 0 || ms > MAX_DELAY_MS) {
			ctl_reply(c, "error: delay wants 0..%d milliseconds", MAX_DELAY_MS);
		} else {
			g.delay_ms = ms;
			update_all(now); /* held data may be due now */
			ctl_reply(c, "ok");
		}
	} else if (!strcmp(verb, "stall") || !strcmp(verb, "refuse") || !strcmp(verb, "blackhole")) {
		flag = verb[0] == 's' ? &g.stall : verb[0] == 'r' ? &g.refuse : &g.blackhole;
		if (!arg || (strcmp(arg, "on") && strcmp(arg, "off"))) {
			ctl_reply(c, "error: %s wants on or off", verb);
		} else {
			*flag = !strcmp(arg, "on");
			if (flag == &g.stall)
				update_all(now); /* stop or resume every pair */
			ctl_reply(c, "ok");
		}
	} else {
		ctl_reply(c, "error: unknown command or bad arguments: %s", verb);
	}
}

static void on_ctl_read(struct ctl *c, int64_t now)
{
	char buf[CTL_LINE];

	if (c->dead)
		return;
	ssize_t r = read(c->t.fd, buf, sizeof buf);
	if (r < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR))
		return;
	if (r <= 0) {
		if (r < 0)
			logmsg("control read: %s", strerror(errno));
		ctl_close(c);
		return;
	}
	for (ssize_t i = 0; i < r && !c->dead; i++) {
		if (buf[i] != '\n') {
			if (c->len + 1 < sizeof c->line)
				c->line[c->len++] = buf[i];
			else
				c->overflow = true;
			continue;
		}
		c->line[c->len] = '\0';
		if (c->overflow)
			ctl_reply(c, "error: line too long");
		else
			run_command(c, c->line, now);
		c->len = 0;
		c->overflow = false;
	}
}

static void ctl_add(int fd, int slot, bool is_stdin)
{
	struct ctl *c = calloc(1, sizeof *c);

	if (!c) {
		logmsg("out of memory for a control connection");
		xclose(fd);
		return;
	}
	c->t = (struct tag){ K_CTL, fd, 0 };
	c->is_stdin = is_stdin;
	g.ctls[slot] = c;
	if (set_events(&c->t, EPOLLIN) == 0)
		return;
	if (!is_stdin || errno != EPERM) {
		ctl_close(c);
		return;
	}
	/* A regular file or /dev/null cannot be polled, but it is all there
	 * already: run it now, to its end. */
	logmsg("stdin is not pollable: running its commands now");
	while (!c->dead)
		on_ctl_read(c, now_ms());
}

static void on_ctl_accept(void)
{
	for (;;) {
		int fd = accept4(g.ctl_lsn.fd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC), slot = 0;

		if (fd < 0) {
			if (errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR)
				logmsg("control accept: %s", strerror(errno));
			return;
		}
		while (slot < MAX_CTL && g.ctls[slot])
			slot++;
		if (slot < MAX_CTL) {
			ctl_add(fd, slot, false);
		} else {
			logmsg("too many control connections");
			xclose(fd);
		}
	}
}

/* ---- setup ----------------------------------------------------------------- */

static int listen_loopback(unsigned *port)
{
	struct sockaddr_in addr = { .sin_family = AF_INET, .sin_port = 0 /* kernel picks */ };
	socklen_t len = sizeof addr;
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);

	addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK); /* never reachable from outside */
	if (fd < 0 || bind(fd, (struct sockaddr *)&addr, sizeof addr) != 0 ||
	    listen(fd, SOMAXCONN) != 0 || getsockname(fd, (struct sockaddr *)&addr, &len) != 0)
		fatal("listen on 127.0.0.1");
	*port = ntohs(addr.sin_port);
	return fd;
}

static int listen_unix(const char *path)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	struct stat st;

	if (strlen(path) >= sizeof sa.sun_path) {
		errno = ENAMETOOLONG;
		fatal(path);
	}
	memcpy(sa.sun_path, path, strlen(path) + 1);
	/* A socket left by an earlier, killed run would make bind fail. */
	if (lstat(path, &st) == 0 && S_ISSOCK(st.st_mode) && unlink(path) != 0)
		fatal(path);
	int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (fd < 0)
		fatal("socket");
	mode_t old = umask(0177); /* the socket file is born 0600: no window */
	int rc = bind(fd, (struct sockaddr *)&sa, sizeof sa);
	umask(old);
	if (rc != 0 || chmod(path, 0600) != 0 || listen(fd, MAX_CTL) != 0)
		fatal(path);
	return fd;
}

static int signal_fd(void)
{
	struct sigaction sa = { .sa_handler = SIG_IGN }; /* EPIPE instead */
	sigset_t set;

	if (sigemptyset(&sa.sa_mask) || sigaction(SIGPIPE, &sa, NULL) || sigemptyset(&set) ||
	    sigaddset(&set, SIGTERM) || sigaddset(&set, SIGINT) ||
	    sigprocmask(SIG_BLOCK, &set, NULL))
		fatal("signal setup");
	/* Signals arrive as epoll events: no handler races with the loop. */
	int fd = signalfd(-1, &set, SFD_NONBLOCK | SFD_CLOEXEC);
	if (fd < 0)
		fatal("signalfd");
	return fd;
}

/* 1024 pairs need over 2048 fds, and the usual soft limit is 1024. */
static void raise_fd_limit(void)
{
	struct rlimit rl;

	if (getrlimit(RLIMIT_NOFILE, &rl) != 0) {
		logmsg("getrlimit: %s", strerror(errno));
		return;
	}
	rl.rlim_cur = rl.rlim_max > 65536 ? 65536 : rl.rlim_max; /* RLIM_INFINITY too */
	if (setrlimit(RLIMIT_NOFILE, &rl) != 0)
		logmsg("setrlimit: %s", strerror(errno));
	else if (rl.rlim_cur < 2100)
		logmsg("only %lu fds: not 1024 connections", (unsigned long)rl.rlim_cur);
}

/* Frees what was closed; at exit (all) closes everything first. */
static void sweep(bool all)
{
	struct pair *p;

	while (all && g.pairs)
		close_pair(g.pairs, false);
	while ((p = g.grave)) {
		g.grave = p->next;
		free(p);
	}
	for (int i = 0; i <= MAX_CTL; i++) {
		if (all && g.ctls[i] && !g.ctls[i]->dead)
			ctl_close(g.ctls[i]);
		if (g.ctls[i] && g.ctls[i]->dead) {
			free(g.ctls[i]);
			g.ctls[i] = NULL;
		}
	}
}

/* ---- client (--send) -------------------------------------------------------- */

/* Writes all of buf, or fails. */
static int send_all(int fd, const char *buf, size_t len)
{
	while (len > 0) {
		ssize_t w = send(fd, buf, len, MSG_NOSIGNAL);

		if (w < 0 && errno == EINTR)
			continue;
		if (w < 0)
			return -1;
		buf += w;
		len -= (size_t)w;
	}
	return 0;
}

/* Reads one reply line (newline included) into line; fails on EOF, an error
 * or the timeout, and on a line longer than the buffer. Reads byte by byte:
 * the replies are short and nothing after the newline is ours to take. */
static int recv_line(int fd, char *line, size_t size)
{
	size_t len = 0;

	while (len + 1 < size) {
		ssize_t r = read(fd, line + len, 1);

		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0) {
			if (r == 0)
				errno = ECONNRESET; /* the proxy closed it */
			return -1;
		}
		if (line[len++] == '\n') {
			line[len] = '\0';
			return 0;
		}
	}
	errno = EMSGSIZE;
	return -1;
}

/* --send: see the comment at the top of the file. */
static int send_commands(const char *path, char **cmds, int n)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	/* A paused (SIGSTOP) proxy must fail the script, not hang it. */
	struct timeval tv = { .tv_sec = 10 };
	char line[CTL_LINE + 1];
	int fd, status = 0;

	if (strlen(path) >= sizeof sa.sun_path) {
		logmsg("--send %s: path too long", path);
		return 1;
	}
	memcpy(sa.sun_path, path, strlen(path) + 1);
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0 || setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv) != 0 ||
	    setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv) != 0 ||
	    connect(fd, (struct sockaddr *)&sa, sizeof sa) != 0) {
		logmsg("--send: connect to %s: %s", path, strerror(errno));
		xclose(fd);
		return 1;
	}
	for (int i = 0; i < n; i++) {
		/* The proxy answers a blank line with nothing: we would wait. */
		if (!cmds[i][strspn(cmds[i], " \t\r")] || strchr(cmds[i], '\n') ||
		    strlen(cmds[i]) >= CTL_LINE) {
			logmsg("--send: not one command line: '%s'", cmds[i]);
			status = 1;
			break;
		}
		snprintf(line, sizeof line, "%s\n", cmds[i]);
		if (send_all(fd, line, strlen(line)) != 0 || recv_line(fd, line, sizeof line) != 0) {
			logmsg("--send %s: %s", cmds[i], errno == EAGAIN || errno == EWOULDBLOCK ?
			       "no reply within 10 s" : strerror(errno));
			status = 1;
			break;
		}
		if (fputs(line, stdout) == EOF)
			status = 1;
		if (strncmp(line, "ok", 2) != 0)
			status = 1;
	}
	xclose(fd);
	if (fflush(stdout) != 0) {
		logmsg("stdout: %s", strerror(errno));
		status = 1;
	}
	return status;
}

int main(int argc, char **argv)
{
	const char *target = NULL, *control = NULL;
	struct epoll_event evs[MAX_EVENTS];
	char err[256];
	unsigned port;
	int status = 0;

	if (setvbuf(stderr, NULL, _IOLBF, 0) != 0)
		logmsg("stderr stays unbuffered");
	if (argc >= 4 && !strcmp(argv[1], "--send"))
		return send_commands(argv[2], argv + 3, argc - 3);
	for (int i = 1; i + 1 < argc; i += 2) {
		if (!strcmp(argv[i], "--target"))
			target = argv[i + 1];
		else if (!strcmp(argv[i], "--control"))
			control = argv[i + 1];
		else
			argc = 0; /* unknown option: usage */
	}
	if (!target || argc % 2 != 1) {
		fputs("usage: tcpproxy --target HOST:PORT [--control PATH|-]\n"
		      "       tcpproxy --send PATH COMMAND...\n"
		      "  (commands: see the comment at the top of tests/servers/tcpproxy.c)\n", stderr);
		return 2;
	}
	if (resolve(target, err, sizeof err) != 0) {
		logmsg("--target %s: %s", target, err);
		return 2;
	}
	raise_fd_limit();
	if ((g.ep = epoll_create1(EPOLL_CLOEXEC)) < 0)
		fatal("epoll_create1");
	g.spare_fd = open("/dev/null", O_RDONLY | O_CLOEXEC); /* see on_accept */
	g.lsn = (struct tag){ K_LISTEN, listen_loopback(&port), 0 };
	g.sig = (struct tag){ K_SIGNAL, signal_fd(), 0 };
	g.ctl_lsn = (struct tag){ K_CTL_LISTEN, -1, 0 };
	if (g.spare_fd < 0 || set_events(&g.lsn, EPOLLIN) || set_events(&g.sig, EPOLLIN))
		fatal("setup");
	if (control && strcmp(control, "-")) {
		g.ctl_lsn.fd = listen_unix(control);
		g.ctl_path = control;
		if (set_events(&g.ctl_lsn, EPOLLIN)) {
			status = 1;
			g.quit = true;
		}
	}
	/* The port line must reach the reader before any reply on stdout. */
	if (printf("%u\n", port) < 0 || fflush(stdout) != 0) {
		logmsg("stdout: %s", strerror(errno));
		status = 1;
		g.quit = true;
	}
	logmsg("listening on 127.0.0.1:%u, target %s, control %s", port, g.target_name,
	       control ? control : "none");
	if (control && !strcmp(control, "-"))
		ctl_add(STDIN_FILENO, MAX_CTL, true); /* a pipe, fifo, tty or socket */

	while (!g.quit) {
		int64_t now = now_ms();
		int timeout = g.delay_ms > 0 && !g.stall ? update_all(now) : -1;
		int n = epoll_wait(g.ep, evs, MAX_EVENTS, timeout);

		if (n < 0 && errno != EINTR) {
			logmsg("epoll_wait: %s", strerror(errno));
			status = 1;
			break;
		}
		now = now_ms();
		for (int i = 0; i < n; i++) {
			struct tag *t = evs[i].data.ptr;
			struct signalfd_siginfo si;

			if (t->kind == K_LISTEN) {
				on_accept(now);
			} else if (t->kind == K_SIGNAL) {
				if (read(t->fd, &si, sizeof si) == (ssize_t)sizeof si) {
					logmsg("got signal %u, exiting", si.ssi_signo);
					g.quit = true;
				}
			} else if (t->kind == K_CTL_LISTEN) {
				on_ctl_accept();
			} else if (t->kind == K_CTL) {
				on_ctl_read((struct ctl *)t, now);
			} else {
				on_pair_event((struct side *)t, evs[i].events, now);
			}
		}
		sweep(false);
	}
	sweep(true);
	xclose(g.lsn.fd);
	xclose(g.ctl_lsn.fd);
	if (g.ctl_path && unlink(g.ctl_path) != 0)
		logmsg("unlink %s: %s", g.ctl_path, strerror(errno));
	xclose(g.sig.fd);
	xclose(g.spare_fd);
	xclose(g.ep);
	return status;
}
