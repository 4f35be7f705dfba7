/* listen_queue.c - a listening socket's accept queue (see listen_queue.h). */
#include "config.h"

#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <linux/netlink.h>
#include <linux/rtnetlink.h>
#include <linux/sock_diag.h>
#include <linux/unix_diag.h>

#include "listen_queue.h"

/* A unix listener: one sock_diag request for its inode, whose answer's
 * UNIX_DIAG_RQLEN holds the queue (rqueue) and the backlog (wqueue). */
static int read_unix(int fd, long long *queued, long long *backlog,
		     struct error *err)
{
	struct {
		struct nlmsghdr nlh;
		struct unix_diag_req req;
	} ask = {
		.nlh = { .nlmsg_len = sizeof(ask),
			 .nlmsg_type = SOCK_DIAG_BY_FAMILY,
			 .nlmsg_flags = NLM_F_REQUEST },
		.req = { .sdiag_family = AF_UNIX,
			 .udiag_states = 1u << 10 /* TCP_LISTEN */,
			 .udiag_show = UDIAG_SHOW_RQLEN,
			 .udiag_cookie = { ~0u, ~0u } },
	};
	struct sockaddr_nl kernel = { .nl_family = AF_NETLINK };
	union {
		struct nlmsghdr nlh;
		char bytes[8192];
	} answer;
	struct stat st;
	ssize_t n;
	int nl, rc = -1;

	if (fstat(fd, &st) != 0)
		return error_set(err, "fstat: %s", strerror(errno));
	ask.req.udiag_ino = (unsigned)st.st_ino;
	nl = socket(AF_NETLINK, SOCK_DGRAM | SOCK_CLOEXEC, NETLINK_SOCK_DIAG);
	if (nl < 0)
		return error_set(err, "sock_diag: %s", strerror(errno));
	if (sendto(nl, &ask, sizeof(ask), 0, (struct sockaddr *)&kernel,
		   sizeof(kernel)) != (ssize_t)sizeof(ask)) {
		error_set(err, "sock_diag: send: %s", strerror(errno));
		goto out;
	}
	n = recv(nl, &answer, sizeof(answer), 0);
	if (n < 0) {
		error_set(err, "sock_diag: recv: %s", strerror(errno));
		goto out;
	}
	error_set(err, "sock_diag: no queue length in the answer");
	for (struct nlmsghdr *h = &answer.nlh; NLMSG_OK(h, (size_t)n);
	     h = NLMSG_NEXT(h, n)) {
		struct unix_diag_msg *msg = NLMSG_DATA(h);
		struct rtattr *a;
		size_t left;

		if (h->nlmsg_type != SOCK_DIAG_BY_FAMILY ||
		    h->nlmsg_len < NLMSG_LENGTH(sizeof(*msg)))
			break;
		a = (struct rtattr *)(msg + 1);
		left = h->nlmsg_len - NLMSG_LENGTH(sizeof(*msg));
		for (; RTA_OK(a, left); a = RTA_NEXT(a, left)) {
			struct unix_diag_rqlen q;

			if (a->rta_type != UNIX_DIAG_RQLEN ||
			    RTA_PAYLOAD(a) < sizeof(q))
				continue;
			memcpy(&q, RTA_DATA(a), sizeof(q));
			*queued = q.udiag_rqueue;
			*backlog = q.udiag_wqueue;
			rc = 0;
		}
	}
out:
	close(nl);
	return rc;
}

int listen_queue_read(int fd, long long *queued, long long *backlog,
		      struct error *err)
{
	struct sockaddr_storage addr;
	socklen_t len = sizeof(addr);
	int rc = -1;

	*queued = *backlog = -1;
	if (getsockname(fd, (struct sockaddr *)&addr, &len) != 0)
		return error_set(err, "getsockname: %s", strerror(errno));
	if (addr.ss_family == AF_UNIX) {
		long long q, b;

		rc = read_unix(fd, &q, &b, err);
		if (rc == 0) {
			*queued = q;
			*backlog = b;
		}
	} else if (addr.ss_family == AF_INET || addr.ss_family == AF_INET6) {
		struct tcp_info info;
		socklen_t info_len = sizeof(info);

		if (getsockopt(fd, IPPROTO_TCP, TCP_INFO, &info,
			       &info_len) != 0)
			return error_set(err, "TCP_INFO: %s", strerror(errno));
		/* For a listener the kernel puts the accept queue there. */
		*queued = info.tcpi_unacked;
		*backlog = info.tcpi_sacked;
		rc = 0;
	} else {
		error_set(err, "not a TCP or unix socket");
	}
	return rc;
}
