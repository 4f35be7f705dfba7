/* listen_queue.h - how many connections wait in a listening socket's accept
 * queue, and the queue's size, as the kernel reports them: TCP_INFO for a
 * TCP listener (tcpi_unacked: waiting, tcpi_sacked: the backlog, as
 * php-fpm reads them), sock_diag (UDIAG_SHOW_RQLEN) for a unix one.
 */
#ifndef PAYHOOK_LISTEN_QUEUE_H
#define PAYHOOK_LISTEN_QUEUE_H

#include "error.h"

/* Reads fd's queue into *queued and *backlog. Returns 0, or -1 with err set
 * (not a listening TCP or unix socket, or the kernel would not say); the
 * outputs are then -1. */
int listen_queue_read(int fd, long long *queued, long long *backlog,
		      struct error *err);

#endif
