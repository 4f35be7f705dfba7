/* freeport.c - test helper: prints a free TCP port on 127.0.0.1, or with
 * --listen-silent keeps listening on a kernel-chosen one and never answers.
 *
 * The printed port lies below the kernel's ephemeral range
 * (ip_local_port_range): the tests stop and restart servers on the port
 * they were given, and while a server is down an outgoing connection of
 * the load the test runs may take a port of that range as its own local
 * port, so that the restart finds it in use. */
#include "config.h"

#include <arpa/inet.h>
#include <errno.h>
#include <stdlib.h>
#include <netinet/in.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

/* Ports below this are left to the system's own services. */
#define PORT_FLOOR 10000
/* Random ports tried below the ephemeral range before the kernel picks. */
#define PORT_TRIES 200

/* The low end of the kernel's ephemeral range (32768 when unreadable). */
static unsigned ephemeral_low(void)
{
	FILE *f = fopen("/proc/sys/net/ipv4/ip_local_port_range", "r");
	unsigned low = 32768, high = 60999;

	if (f != NULL) {
		if (fscanf(f, "%u %u", &low, &high) != 2)
			low = 32768;
		fclose(f);
	}
	return low;
}

/* Opens a TCP socket bound to 127.0.0.1 on want (0: a kernel-chosen port),
 * listening when listen_too is set. Returns the fd and stores the port in
 * *port, or returns -1 (after printing why, unless quiet). */
static int bind_port(int listen_too, unsigned want, int quiet, unsigned *port)
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
	addr.sin_port = htons((unsigned short)want); /* 0: the kernel's */
	if (bind(fd, (struct sockaddr *)&addr, sizeof addr) < 0) {
		if (!quiet)
			perror("freeport: bind 127.0.0.1");
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
	      "  Prints a free TCP port on 127.0.0.1, below the kernel's\n"
	      "  ephemeral range (see freeport.c).\n"
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

	fd = -1;
	if (!silent) {
		unsigned low = ephemeral_low();

		srand((unsigned)time(NULL) ^ ((unsigned)getpid() << 16));
		for (int i = 0; fd < 0 && low > PORT_FLOOR + 1000 &&
				i < PORT_TRIES; i++)
			fd = bind_port(0, PORT_FLOOR + (unsigned)rand() %
							 (low - PORT_FLOOR),
				       1, &port);
	}
	if (fd < 0)
		fd = bind_port(silent, 0, 0, &port);
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
