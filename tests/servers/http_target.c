/* http_target.c - test helper: a small poll-based HTTP/1.1 server on a
 * kernel-chosen loopback port, standing in for a merchant's fulfilment in the
 * payhook-dispatch test and benchmark. It records every request it receives
 * and answers as a control file says.
 *
 *   http_target --control FILE --record FILE [--port N]
 *
 * prints its port (N, else one the kernel chose) on standard output, then serves until killed. Before each
 * answer it reads the first line of the control file (absent or empty: 200):
 *
 *   200, 404, 500 ...  answer with that status
 *   500x3              answer 500 three times, then 200 (the count starts
 *                      again whenever the control line changes)
 *   hang               never answer (the connection stays open)
 *   close              close the connection without answering
 *   slow MS            answer 200 after MS milliseconds
 *   429 retry-after N  answer 429 (or any status) with "Retry-After: N"
 *   500 if TEXT        answer 500 (or any status) to a request whose body
 *                      holds TEXT, 200 to the others
 *
 * Each request appends one line to the record file, fields separated by tabs:
 *
 *   unix_ms method path idempotency-key webhook-id webhook-timestamp
 *   webhook-signature user-agent content-type answer body
 *
 * with "-" for an absent header; answer is the control line used. The body
 * comes last, as it is, unless it holds a control character (a tab or a
 * newline would break the line): then "hex:" and its bytes in hex.
 */
#include "config.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#define CONN_MAX 1024
#define HEAD_MAX (64 * 1024)
#define BODY_MAX (64L * 1024 * 1024)
#define CONTROL_MAX 128

enum conn_state {
	CONN_READING,  /* waiting for (the rest of) a request */
	CONN_HOLDING,  /* "hang": never answered */
	CONN_SLOW,     /* "slow MS": answered at answer_at_ms */
};

struct conn {
	int fd;
	enum conn_state state;
	char *buf;
	size_t len, cap;
	size_t head_len;       /* bytes up to and including the blank line */
	long content_length;
	bool continued;        /* "100 Continue" sent */
	int64_t answer_at_ms;
};

static struct conn conns[CONN_MAX];
static size_t conn_count;
static const char *control_path;
static int record_fd = -1;
/* The control line the count of "CODExN" belongs to, and that count. */
static char counted_control[CONTROL_MAX];
static long counted;

static int64_t now_ms(clockid_t id)
{
	struct timespec ts;

	clock_gettime(id, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static void fail(const char *what)
{
	fprintf(stderr, "http_target: %s: %s\n", what, strerror(errno));
	exit(1);
}

static void conn_close(size_t i)
{
	close(conns[i].fd);
	free(conns[i].buf);
	conns[i] = conns[--conn_count];
	memset(&conns[conn_count], 0, sizeof(conns[conn_count]));
}

/* The control line, trimmed; "200" when the file is absent or empty. */
static void read_control(char *out, size_t cap)
{
	FILE *f = fopen(control_path, "r");
	size_t len;

	snprintf(out, cap, "200");
	if (f == NULL)
		return;
	if (fgets(out, (int)cap, f) == NULL)
		snprintf(out, cap, "200");
	fclose(f);
	len = strcspn(out, "\r\n");
	out[len] = '\0';
	while (len > 0 && out[len - 1] == ' ')
		out[--len] = '\0';
	if (len == 0)
		snprintf(out, cap, "200");
}

/* The value of header name in the request head (NUL-terminated copy into
 * out), or "-". */
static void header_value(const struct conn *c, const char *name, char *out,
			 size_t cap)
{
	const char *p = memchr(c->buf, '\n', c->head_len);
	const char *end = c->buf + c->head_len;
	size_t name_len = strlen(name);

	snprintf(out, cap, "-");
	while (p != NULL && ++p < end) {
		const char *eol = memchr(p, '\n', (size_t)(end - p));
		size_t line_len = eol != NULL ? (size_t)(eol - p) : (size_t)(end - p);

		if (line_len > name_len && p[name_len] == ':' &&
		    strncasecmp(p, name, name_len) == 0) {
			const char *v = p + name_len + 1;
			size_t v_len = line_len - name_len - 1;

			while (v_len > 0 && (*v == ' ' || *v == '\t')) {
				v++;
				v_len--;
			}
			while (v_len > 0 && (v[v_len - 1] == '\r' ||
					     v[v_len - 1] == ' '))
				v_len--;
			if (v_len >= cap)
				v_len = cap - 1;
			memcpy(out, v, v_len);
			out[v_len] = '\0';
			if (v_len == 0)
				snprintf(out, cap, "-");
			return;
		}
		p = eol;
	}
}

/* Appends the request's line to the record file, in one write. */
static void record(const struct conn *c, const char *answer)
{
	static const char *const headers[] = {
		"Idempotency-Key", "webhook-id", "webhook-timestamp",
		"webhook-signature", "User-Agent", "Content-Type",
	};
	const char *body = c->buf + c->head_len;
	size_t body_len = (size_t)c->content_length, cap, used;
	char method[16] = "-", path[512] = "-", value[1024];
	bool plain = true;
	char *line;

	sscanf(c->buf, "%15s %511s", method, path);
	for (size_t i = 0; i < body_len; i++) {
		if ((unsigned char)body[i] < 0x20 || body[i] == 0x7f)
			plain = false;
	}
	cap = 2048 + sizeof(headers) / sizeof(headers[0]) * sizeof(value) +
	      (plain ? body_len : 4 + 2 * body_len);
	line = malloc(cap);
	if (line == NULL)
		fail("out of memory");
	used = (size_t)snprintf(line, cap, "%lld\t%s\t%s",
				(long long)now_ms(CLOCK_REALTIME), method, path);
	for (size_t i = 0; i < sizeof(headers) / sizeof(headers[0]); i++) {
		header_value(c, headers[i], value, sizeof(value));
		used += (size_t)snprintf(line + used, cap - used, "\t%s", value);
	}
	used += (size_t)snprintf(line + used, cap - used, "\t%s\t%s", answer,
				 plain ? "" : "hex:");
	for (size_t i = 0; i < body_len; i++) {
		if (plain)
			line[used++] = body[i];
		else
			used += (size_t)snprintf(line + used, cap - used, "%02x",
						 (unsigned char)body[i]);
	}
	line[used++] = '\n';
	if (write(record_fd, line, used) != (ssize_t)used)
		fail("writing the record");
	free(line);
}

/* Answers status; retry_after >= 0 adds a Retry-After header. */
static void respond(struct conn *c, int status, long retry_after)
{
	char out[320], body[64], extra[48] = "";
	int body_len, len;

	body_len = status == 200 ? snprintf(body, sizeof(body), "ok\n")
				 : snprintf(body, sizeof(body),
					    "target says %d\n", status);
	if (retry_after >= 0)
		snprintf(extra, sizeof(extra), "Retry-After: %ld\r\n",
			 retry_after);
	len = snprintf(out, sizeof(out),
		       "HTTP/1.1 %d %s\r\nContent-Type: text/plain\r\n"
		       "%sContent-Length: %d\r\n\r\n%s",
		       status, status == 200 ? "OK" : "Status", extra, body_len,
		       body);
	/* Small enough for the socket buffer; a peer that went away is its
	 * own loss. */
	if (write(c->fd, out, (size_t)len) < 0) {
		/* nothing to do */
	}
}

/* Drops the request just handled from the buffer (keeping any bytes of the
 * next one) and gets ready for the next. */
static void next_request(struct conn *c)
{
	size_t used = c->head_len + (size_t)c->content_length;

	memmove(c->buf, c->buf + used, c->len - used);
	c->len -= used;
	c->head_len = 0;
	c->content_length = 0;
	c->continued = false;
	c->state = CONN_READING;
}

/* Answers a complete request as the control file says. Returns false when
 * the connection was closed. */
static bool handle(size_t i)
{
	struct conn *c = &conns[i];
	char control[CONTROL_MAX];
	int code = 200, used = 0;
	long n = 0, ms = 0, retry_after = -1;
	char x;

	read_control(control, sizeof(control));
	record(c, control);
	if (strcmp(control, "hang") == 0) {
		c->state = CONN_HOLDING;
		return true;
	}
	if (strcmp(control, "close") == 0) {
		conn_close(i);
		return false;
	}
	if (sscanf(control, "slow %ld", &ms) == 1) {
		c->state = CONN_SLOW;
		c->answer_at_ms = now_ms(CLOCK_MONOTONIC) + ms;
		return true;
	}
	if (sscanf(control, "%d if %n", &code, &used) == 1 && used > 0) {
		const char *text = control + used;
		const char *body = c->buf + c->head_len;
		size_t text_len = strlen(text), body_len = (size_t)c->content_length;
		bool found = false;

		for (size_t k = 0; text_len > 0 && k + text_len <= body_len; k++) {
			if (memcmp(body + k, text, text_len) == 0) {
				found = true;
				break;
			}
		}
		if (!found)
			code = 200;
	} else if (sscanf(control, "%d retry-after %ld", &code, &retry_after) ==
		   2) {
		/* as it says */
	} else if (sscanf(control, "%d%c%ld", &code, &x, &n) == 3 && x == 'x') {
		if (strcmp(control, counted_control) != 0) {
			snprintf(counted_control, sizeof(counted_control), "%s",
				 control);
			counted = 0;
		}
		if (counted++ >= n)
			code = 200;
	} else if (sscanf(control, "%d", &code) != 1 || code < 100 ||
		   code > 599) {
		code = 200;
	}
	respond(c, code, retry_after);
	next_request(c);
	return true;
}

/* Looks for a complete request head and body in c's buffer. Returns 1 when
 * one is there, 0 when more is needed, -1 when the request is unusable. */
static int parse(struct conn *c)
{
	if (c->head_len == 0) {
		char *end = NULL, value[32];

		for (size_t k = 3; k < c->len; k++) {
			if (memcmp(c->buf + k - 3, "\r\n\r\n", 4) == 0) {
				end = c->buf + k + 1;
				break;
			}
		}
		if (end == NULL)
			return c->len > HEAD_MAX ? -1 : 0;
		c->head_len = (size_t)(end - c->buf);
		header_value(c, "Content-Length", value, sizeof(value));
		c->content_length = strcmp(value, "-") == 0 ? 0 : atol(value);
		if (c->content_length < 0 || c->content_length > BODY_MAX)
			return -1;
		header_value(c, "Expect", value, sizeof(value));
		if (strcasecmp(value, "100-continue") == 0 && !c->continued) {
			static const char cont[] = "HTTP/1.1 100 Continue\r\n\r\n";

			c->continued = true;
			if (write(c->fd, cont, sizeof(cont) - 1) < 0)
				return -1;
		}
	}
	return c->len - c->head_len >= (size_t)c->content_length ? 1 : 0;
}

/* Reads from connection i and answers what is complete. */
static void on_readable(size_t i)
{
	struct conn *c = &conns[i];
	ssize_t n;
	int ready;

	if (c->cap - c->len < 65536) {
		size_t cap = c->cap * 2 + 65536;
		char *grown = realloc(c->buf, cap);

		if (grown == NULL)
			fail("out of memory");
		c->buf = grown;
		c->cap = cap;
	}
	n = read(c->fd, c->buf + c->len, c->cap - c->len);
	if (n <= 0) {
		if (n < 0 && errno == EINTR)
			return;
		conn_close(i);
		return;
	}
	if (c->state != CONN_READING)
		return; /* held: what it sends next waits for no one */
	c->len += (size_t)n;
	while (c->state == CONN_READING && (ready = parse(c)) != 0) {
		if (ready < 0) {
			conn_close(i);
			return;
		}
		if (!handle(i))
			return;
	}
}

static int listen_loopback(unsigned *port)
{
	struct sockaddr_in addr;
	socklen_t len = sizeof(addr);
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0), one = 1;

	if (fd < 0)
		fail("socket");
	setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	memset(&addr, 0, sizeof(addr));
	addr.sin_family = AF_INET;
	addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	addr.sin_port = htons((uint16_t)*port);
	if (bind(fd, (struct sockaddr *)&addr, sizeof(addr)) != 0 ||
	    listen(fd, SOMAXCONN) != 0 ||
	    getsockname(fd, (struct sockaddr *)&addr, &len) != 0)
		fail("bind/listen on 127.0.0.1");
	*port = ntohs(addr.sin_port);
	return fd;
}

static void usage(FILE *out)
{
	fputs("usage: http_target --control FILE --record FILE [--port N]\n"
	      "  Serves HTTP/1.1 on 127.0.0.1 port N or a kernel-chosen one (printed on\n"
	      "  standard output), records each request to the record file and\n"
	      "  answers as the first line of the control file says: 200, 500,\n"
	      "  500x3, hang, close or slow MS.\n",
	      out);
}

int main(int argc, char **argv)
{
	struct pollfd fds[CONN_MAX + 1];
	const char *record_path = NULL;
	unsigned port = 0;
	int listen_fd;

	for (int i = 1; i < argc; i++) {
		if (strcmp(argv[i], "--control") == 0 && i + 1 < argc) {
			control_path = argv[++i];
		} else if (strcmp(argv[i], "--record") == 0 && i + 1 < argc) {
			record_path = argv[++i];
		} else if (strcmp(argv[i], "--port") == 0 && i + 1 < argc) {
			port = (unsigned)strtoul(argv[++i], NULL, 10) & 0xffffu;
		} else if (strcmp(argv[i], "--help") == 0) {
			usage(stdout);
			return 0;
		} else {
			usage(stderr);
			return 2;
		}
	}
	if (control_path == NULL || record_path == NULL) {
		usage(stderr);
		return 2;
	}
	signal(SIGPIPE, SIG_IGN);
	record_fd = open(record_path, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC,
			 0644);
	if (record_fd < 0)
		fail(record_path);
	listen_fd = listen_loopback(&port);
	/* The port line must reach the reader before we serve. */
	if (printf("%u\n", port) < 0 || fflush(stdout) != 0)
		fail("stdout");

	for (;;) {
		int64_t now = now_ms(CLOCK_MONOTONIC), wake = -1;
		int timeout;

		for (size_t i = 0; i < conn_count;) {
			struct conn *c = &conns[i];

			if (c->state == CONN_SLOW && c->answer_at_ms <= now) {
				respond(c, 200, -1);
				next_request(c);
				/* A request that came in behind it. */
				if (parse(c) > 0 && !handle(i))
					continue;
			}
			if (c->state == CONN_SLOW &&
			    (wake < 0 || c->answer_at_ms < wake))
				wake = c->answer_at_ms;
			i++;
		}
		fds[0] = (struct pollfd){ .fd = listen_fd, .events = POLLIN };
		for (size_t i = 0; i < conn_count; i++)
			fds[i + 1] = (struct pollfd){ .fd = conns[i].fd,
						      .events = POLLIN };
		timeout = wake < 0 ? -1 : (int)(wake - now);
		if (poll(fds, conn_count + 1, timeout) < 0) {
			if (errno == EINTR)
				continue;
			fail("poll");
		}
		/* Backwards: conn_close moves the last connection into i. */
		for (size_t i = conn_count; i > 0; i--) {
			if (fds[i].revents & (POLLIN | POLLHUP | POLLERR))
				on_readable(i - 1);
		}
		if (fds[0].revents & POLLIN) {
			int fd = accept4(listen_fd, NULL, NULL, SOCK_CLOEXEC);

			if (fd < 0)
				continue;
			if (conn_count == CONN_MAX) {
				close(fd);
				continue;
			}
			conns[conn_count++] = (struct conn){ .fd = fd };
		}
	}
}
