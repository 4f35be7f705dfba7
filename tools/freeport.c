/* freeport.c - test helper: prints a free TCP port on 127.0.0.1 chosen by the
 * kernel, or with --listen-silent keeps listening on it and never answers. */
#include "config.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

/* Opens a TCP socket bound to 127.0.0.1 on a kernel-chosen port, listening
 * when listen_too is set. Returns the fd and stores the port in *port, or
 * returns -1 after printing why. */
static int bind_loopback(int listen_too, unsigned *port)
{
	struct sockaddr_in addr;
	socklen_t len = sizeof addr;
	int fd = socket(AF_INET, SOCK_STREAM, 0);

	if (fd < 0) {
		perror("freeport: socket");
		return -1;
	}
	memset(&addr, 0, sizeof addr);
	addr.sin_family = AF_INET;
	addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	addr.sin_port = 0; /* the kernel picks an unused port */
	if (bind(fd, (struct sockaddr *)&addr, sizeof addr) < 0) {
		perror("freeport: bind 127.0.0.1:0");
		goto fail;
	}
	if (listen_too && listen(fd, SOMAXCONN) < 0) {
		perror("freeport: listen");
		goto fail;
	}
	if (getsockname(fd, (struct sockaddr *)&addr, &len) < 0) {
		perror("freeport: getsockname");
		goto fail;
	}
	*port = ntohs(addr.sin_port);
	return fd;
fail:
	close(fd);
	return -1;
}

/* Accepts connections forever and never reads or writes: each accepted fd is
 * kept open, so the peer sees a connected server that never answers (what a
 * hung backend looks like). Returns only on an unexpected accept error. */
static int listen_silent(int fd)
{
	/* 100 ms pause when out of fds: the connection then waits in the
	 * backlog, which looks the same to the client. */
	const struct timespec pause = { 0, 100 * 1000 * 1000 };

	for (;;) {
		int conn = accept(fd, NULL, NULL);

		if (conn >= 0)
			continue; /* deliberately left open and unread */
		if (errno == EINTR || errno == ECONNABORTED)
			continue;
		if (errno == EMFILE || errno == ENFILE || errno == ENOBUFS ||
		    errno == ENOMEM) {
			nanosleep(&pause, NULL);
			continue;
		}
		perror("freeport: accept");
		return -1;
	}
}

static void usage(FILE *out)
{
	fputs("usage: freeport [--listen-silent]\n"
	      "  Prints a free TCP port on 127.0.0.1 chosen by the kernel.\n"
	      "  --listen-silent  keep listening on it, accept connections and\n"
	      "                   never answer (until killed)\n",
	      out);
}

int main(int argc, char **argv)
{
	int silent = 0;
	unsigned port = 0;
	int fd;

	if (argc == 2 && strcmp(argv[1], "--listen-silent") == 0) {
		silent = 1;
	} else if (argc == 2 && strcmp(argv[1], "--help") == 0) {
		usage(stdout);
		return 0;
	} else if (argc != 1) {
		usage(stderr);
		return 2;
	}

	fd = bind_loopback(silent, &port);
	if (fd < 0)
		return 1;
	/* The port line must reach the reader before we block in accept(). */
	if (printf("%u\n", port) < 0 || fflush(stdout) != 0) {
		perror("freeport: stdout");
		close(fd);
		return 1;
	}
	if (!silent) {
		close(fd);
		return 0;
	}
	listen_silent(fd);
	close(fd);
	return 1;
}
