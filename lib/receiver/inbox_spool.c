/* inbox_spool.c - the inbox's spool files on the request host (see
 * inbox_spool.h): appending a batch of kept deliveries, and loading the
 * files back in batches.
 *
 * Only the process holding a file's lock writes it, at offsets it tracks
 * itself (pwrite: O_APPEND would move the header's pwrite to the end). No
 * fsync: a file outlives its process in the page cache, and a host that
 * crashes loses its last second as MariaDB does with
 * innodb_flush_log_at_trx_commit = 2.
 */
#include "config.h"

#include <dirent.h>
#include <stdbool.h>
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "inbox_spool.h"
#include "log.h"

/* The file's header: its magic, then the offset loaded up to. */
#define FILE_MAGIC "PHINBOX1"
#define HEADER_BYTES 16
/* A delivery's head: magic, the lengths of provider, its class (0 ignored,
 * 1 unauthorized with a signature that failed, 2 unauthorized without
 * one), reason, headers and body, then received_us; the bytes
 * follow without terminators. */
#define RECORD_MAGIC 0x52494850u
#define HEAD_BYTES 32
#define PROVIDER_MAX 64
#define FIELD_MAX (1u << 30)

struct inbox_spool {
	char *dir;
	char *path;        /* this process's file; NULL until created */
	int fd;            /* -1 until created */
	uint64_t loaded;   /* offset loaded up to */
	uint64_t end;      /* offset of its end */
	/* When an orphan that cannot be opened was last said (monotonic
	 * seconds): at most once a minute, its deliveries waiting there. */
	time_t unopened_said_s;
};

struct record_head {
	uint32_t magic, provider_len, class, reason_len, headers_len,
		body_len;
	int64_t received_us;
};

struct inbox_spool *inbox_spool_new(const char *dir, struct error *err)
{
	struct inbox_spool *s = calloc(1, sizeof(*s));

	if (s == NULL || (s->dir = strdup(dir)) == NULL) {
		free(s);
		error_set(err, "inbox spool: out of memory");
		return NULL;
	}
	s->fd = -1;
	return s;
}

void inbox_spool_free(struct inbox_spool *s)
{
	if (s == NULL)
		return;
	if (s->fd >= 0) {
		/* An empty file is no use to anyone; one that holds
		 * deliveries waits for the next worker's load. */
		if (s->end == s->loaded && unlink(s->path) != 0)
			log_warn("inbox spool: removing %s: %s", s->path,
				 strerror(errno));
		close(s->fd);
	}
	free(s->path);
	free(s->dir);
	free(s);
}

/* Writes len bytes of buf at offset off in full. 0, or -1 (errno). */
static int write_at(int fd, const void *buf, size_t len, uint64_t off)
{
	const char *p = buf;

	while (len > 0) {
		ssize_t n = pwrite(fd, p, len, (off_t)off);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0) {
			if (n == 0)
				errno = ENOSPC;
			return -1;
		}
		p += n;
		len -= (size_t)n;
		off += (uint64_t)n;
	}
	return 0;
}

/* Reads len bytes at off in full: 1, 0 when the file ends first, -1
 * (errno). */
static int read_at(int fd, void *buf, size_t len, uint64_t off)
{
	char *p = buf;

	while (len > 0) {
		ssize_t n = pread(fd, p, len, (off_t)off);

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return -1;
		if (n == 0)
			return 0;
		p += n;
		len -= (size_t)n;
		off += (uint64_t)n;
	}
	return 1;
}

/* Writes the header saying the file is loaded up to loaded. */
static int write_header(int fd, uint64_t loaded)
{
	char h[HEADER_BYTES];

	memcpy(h, FILE_MAGIC, 8);
	memcpy(h + 8, &loaded, 8);
	return write_at(fd, h, sizeof(h), 0);
}

/* Creates this process's file under a name no loader looks at, locks it,
 * then gives it its name: a loader never sees it unlocked. */
static int create_file(struct inbox_spool *s, struct error *err)
{
	char tmp[4096], path[4096];
	long pid = (long)getpid();
	struct timespec now;
	long long start;
	int fd;

	/* The wall clock, not the monotonic one: the name must not come
	 * back after a reboot, when an orphan may still carry it. */
	clock_gettime(CLOCK_REALTIME, &now);
	start = (long long)now.tv_sec * 1000000 + now.tv_nsec / 1000;

	if ((size_t)snprintf(path, sizeof(path), "%s/inbox-%ld-%lld.spool",
			     s->dir, pid, start) >= sizeof(path) ||
	    (size_t)snprintf(tmp, sizeof(tmp), "%s/.inbox-%ld-%lld.new",
			     s->dir, pid, start) >= sizeof(tmp))
		return error_set(err, "inbox_spool_dir %s: the path is too long",
				 s->dir);
	fd = open(tmp, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
	if (fd < 0)
		return error_set(err, "inbox_spool_dir %s: creating a spool "
				 "file: %s", s->dir, strerror(errno));
	if (flock(fd, LOCK_EX | LOCK_NB) != 0 ||
	    write_header(fd, HEADER_BYTES) != 0 || rename(tmp, path) != 0) {
		int e = errno;

		unlink(tmp);
		close(fd);
		return error_set(err, "inbox_spool_dir %s: setting up %s: %s",
				 s->dir, path, strerror(e));
	}
	s->path = strdup(path);
	if (s->path == NULL) {
		unlink(path);
		close(fd);
		return error_set(err, "inbox spool: out of memory");
	}
	s->fd = fd;
	s->loaded = s->end = HEADER_BYTES;
	return 0;
}

/* The class a record's head carries for row. */
static uint32_t class_of(const struct inbox_row *row)
{
	if (row->signature == INBOX_SIGNATURE_MISSING)
		return 2;
	if (row->signature == INBOX_SIGNATURE_FAILED)
		return 1;
	if (row->signature == INBOX_SIGNATURE_VERIFIED)
		return 0;
	return strcmp(row->outcome, "unauthorized") == 0 ? 1 : 0;
}

int inbox_spool_append(struct inbox_spool *s, const struct inbox_row *rows,
		       size_t n, struct error *err)
{
	size_t total = 0, at = 0;
	char *buf;

	if (s->fd < 0 && create_file(s, err) != 0)
		return -1;
	for (size_t i = 0; i < n; i++)
		total += HEAD_BYTES + strlen(rows[i].provider) +
			 strlen(rows[i].reason) + strlen(rows[i].headers) +
			 rows[i].len;
	buf = malloc(total > 0 ? total : 1);
	if (buf == NULL)
		return error_set(err, "inbox spool: out of memory for %zu "
				 "bytes", total);
	for (size_t i = 0; i < n; i++) {
		const struct inbox_row *r = &rows[i];
		struct record_head h = {
			.magic = RECORD_MAGIC,
			.provider_len = (uint32_t)strlen(r->provider),
			.class = class_of(r),
			.reason_len = (uint32_t)strlen(r->reason),
			.headers_len = (uint32_t)strlen(r->headers),
			.body_len = (uint32_t)r->len,
			.received_us = r->received_us,
		};

		memcpy(buf + at, &h, HEAD_BYTES);
		at += HEAD_BYTES;
		memcpy(buf + at, r->provider, h.provider_len);
		at += h.provider_len;
		memcpy(buf + at, r->reason, h.reason_len);
		at += h.reason_len;
		memcpy(buf + at, r->headers, h.headers_len);
		at += h.headers_len;
		memcpy(buf + at, r->body, r->len);
		at += r->len;
	}
	if (write_at(s->fd, buf, total, s->end) != 0) {
		int e = errno;

		/* Nothing half-written stays for a loader to trip on. */
		if (ftruncate(s->fd, (off_t)s->end) != 0)
			log_warn("inbox spool: cutting %s back: %s", s->path,
				 strerror(errno));
		free(buf);
		return error_set(err, "inbox spool: writing %zu bytes to %s: "
				 "%s", total, s->path, strerror(e));
	}
	free(buf);
	s->end += total;
	return 0;
}

size_t inbox_spool_pending(const struct inbox_spool *s)
{
	return (size_t)(s->end - s->loaded);
}

/* A batch being read from a file: the deliveries' bytes in buf (each
 * string followed by a '\0'), and where each one's fields start. */
struct batch {
	char *buf;
	size_t len, cap;
	struct entry {
		size_t provider, reason, headers, body, body_len;
		int64_t received_us;
		uint32_t class; /* as in struct record_head */
	} *entries;
	struct inbox_row *rows;
	size_t n, max_rows, bytes;
};

/* Appends len bytes read at off, then a '\0'; returns where they start,
 * or (size_t)-1 (errno; 0 when the file ended). */
static size_t batch_read(struct batch *b, int fd, size_t len, uint64_t *off)
{
	size_t at = b->len;

	if (b->cap - b->len < len + 1) {
		size_t cap = b->cap > 0 ? b->cap : 65536;
		char *p;

		while (cap - b->len < len + 1)
			cap *= 2;
		p = realloc(b->buf, cap);
		if (p == NULL) {
			errno = ENOMEM;
			return (size_t)-1;
		}
		b->buf = p;
		b->cap = cap;
	}
	switch (read_at(fd, b->buf + at, len, *off)) {
	case 1:
		break;
	case 0:
		errno = 0;
		return (size_t)-1;
	default:
		return (size_t)-1;
	}
	b->buf[at + len] = '\0';
	b->len += len + 1;
	*off += len;
	return at;
}

/* Hands the batch to load; empties it. 0, or -1 with err set. */
static int batch_load(struct batch *b, inbox_spool_load_fn load, void *ctx,
		      struct error *err)
{
	int rc;

	for (size_t i = 0; i < b->n; i++) {
		const struct entry *e = &b->entries[i];

		b->rows[i] = (struct inbox_row){
			.provider = b->buf + e->provider,
			.received_us = e->received_us,
			.outcome = e->class > 0 ? "unauthorized" : "ignored",
			.signature = e->class == 0 ? INBOX_SIGNATURE_VERIFIED :
				     e->class == 1 ? INBOX_SIGNATURE_FAILED :
						     INBOX_SIGNATURE_MISSING,
			.reason = b->buf + e->reason,
			.headers = b->buf + e->headers,
			.body = b->buf + e->body,
			.len = e->body_len,
		};
	}
	rc = b->n > 0 ? load(ctx, b->rows, b->n, err) : 0;
	b->n = 0;
	b->len = 0;
	b->bytes = 0;
	return rc;
}

/* Reads one delivery at *off into the batch. 1 when read, 0 when the file
 * has no whole delivery there (cut short, or not one), -1 (errno). */
static int read_record(struct batch *b, int fd, uint64_t size, uint64_t *off)
{
	struct record_head h;
	struct entry *e = &b->entries[b->n];
	uint64_t at = *off;
	int rc;

	if (size - at < HEAD_BYTES)
		return 0;
	rc = read_at(fd, &h, HEAD_BYTES, at);
	if (rc <= 0)
		return rc;
	at += HEAD_BYTES;
	if (h.magic != RECORD_MAGIC || h.provider_len == 0 ||
	    h.provider_len > PROVIDER_MAX || h.class > 2 ||
	    h.reason_len > FIELD_MAX || h.headers_len > FIELD_MAX ||
	    h.body_len > FIELD_MAX ||
	    (uint64_t)h.provider_len + h.reason_len + h.headers_len +
			    h.body_len > size - at)
		return 0;
	if ((e->provider = batch_read(b, fd, h.provider_len, &at)) ==
		    (size_t)-1 ||
	    (e->reason = batch_read(b, fd, h.reason_len, &at)) == (size_t)-1 ||
	    (e->headers = batch_read(b, fd, h.headers_len, &at)) ==
		    (size_t)-1 ||
	    (e->body = batch_read(b, fd, h.body_len, &at)) == (size_t)-1)
		return errno == 0 ? 0 : -1;
	e->body_len = h.body_len;
	e->received_us = h.received_us;
	e->class = h.class;
	b->n++;
	b->bytes += h.headers_len + h.body_len;
	*off = at;
	return 1;
}

/* Loads the file fd (named path) from the offset its header names, moving
 * the header after each batch. Sets *whole when it was read to its end
 * (what was cut short counted in *lost). 0, or -1 with err set. */
static int load_file(int fd, const char *path, struct batch *b,
		     size_t max_bytes, inbox_spool_load_fn load, void *ctx,
		     size_t *loaded, size_t *lost, bool *whole,
		     struct error *err)
{
	char h[HEADER_BYTES];
	uint64_t off, done, size;
	struct stat st;
	int rc;

	*whole = false;
	if (fstat(fd, &st) != 0 || read_at(fd, h, sizeof(h), 0) < 0)
		return error_set(err, "inbox spool: reading %s: %s", path,
				 strerror(errno));
	size = (uint64_t)st.st_size;
	if (size < HEADER_BYTES || memcmp(h, FILE_MAGIC, 8) != 0) {
		log_warn("inbox spool: %s is not a spool file (%llu bytes); "
			 "left out", path, (unsigned long long)size);
		*lost += size > 0;
		*whole = true;
		return 0;
	}
	memcpy(&off, h + 8, 8);
	if (off < HEADER_BYTES || off > size)
		off = HEADER_BYTES;
	done = off;
	while (off < size) {
		if (b->n == b->max_rows ||
		    (b->n > 0 && b->bytes >= max_bytes)) {
			size_t n = b->n;

			if (batch_load(b, load, ctx, err) != 0)
				return -1;
			*loaded += n;
			done = off;
			if (write_header(fd, done) != 0)
				return error_set(err, "inbox spool: writing "
						 "%s: %s", path,
						 strerror(errno));
		}
		rc = read_record(b, fd, size, &off);
		if (rc < 0)
			return error_set(err, "inbox spool: reading %s: %s",
					 path, strerror(errno));
		if (rc == 0) {
			log_warn("inbox spool: the last %llu bytes of %s are "
				 "not a whole delivery (a process killed while "
				 "writing it); left out",
				 (unsigned long long)(size - off), path);
			(*lost)++;
			break;
		}
	}
	if (b->n > 0) {
		size_t n = b->n;

		if (batch_load(b, load, ctx, err) != 0)
			return -1;
		*loaded += n;
	}
	*whole = true;
	return 0;
}

/* Whether name is a spool file's (not one being set up). */
static bool spool_name(const char *name)
{
	size_t len = strlen(name);

	return strncmp(name, "inbox-", 6) == 0 && len > 12 &&
	       strcmp(name + len - 6, ".spool") == 0;
}

/* Loads the orphans of the directory (files whose lock is free). */
static int load_orphans(struct inbox_spool *s, struct batch *b,
			size_t max_bytes, inbox_spool_load_fn load, void *ctx,
			size_t *loaded, size_t *lost, struct error *err)
{
	DIR *dir = opendir(s->dir);
	struct dirent *d;
	int rc = 0;

	if (dir == NULL)
		return error_set(err, "inbox_spool_dir %s: %s", s->dir,
				 strerror(errno));
	while (rc == 0 && (d = readdir(dir)) != NULL) {
		char path[4096];
		struct stat st;
		bool whole;
		int fd;

		if (!spool_name(d->d_name) ||
		    (size_t)snprintf(path, sizeof(path), "%s/%s", s->dir,
				     d->d_name) >= sizeof(path) ||
		    (s->path != NULL && strcmp(path, s->path) == 0))
			continue;
		fd = open(path, O_RDWR | O_CLOEXEC | O_NOFOLLOW);
		if (fd < 0) {
			struct timespec now;

			clock_gettime(CLOCK_MONOTONIC_COARSE, &now);
			if (s->unopened_said_s == 0 ||
			    now.tv_sec - s->unopened_said_s >= 60) {
				s->unopened_said_s = now.tv_sec;
				log_warn("inbox spool: %s cannot be opened (%s): "
					 "what it holds is not loaded until it "
					 "can be (a file of another user? run "
					 "the pools that share the directory "
					 "as one user)", path, strerror(errno));
			}
			continue;
		}
		/* Locked: its worker lives, or another one loads it. Unlinked
		 * since we opened it: another one loaded it. */
		if (flock(fd, LOCK_EX | LOCK_NB) != 0 || fstat(fd, &st) != 0 ||
		    st.st_nlink == 0) {
			close(fd);
			continue;
		}
		rc = load_file(fd, path, b, max_bytes, load, ctx, loaded, lost,
			       &whole, err);
		/* Removed while locked: a loader that opened it before sees
		 * no link once it gets the lock. */
		if (whole && unlink(path) != 0)
			log_warn("inbox spool: removing %s: %s", path,
				 strerror(errno));
		close(fd);
	}
	closedir(dir);
	return rc;
}

int inbox_spool_load(struct inbox_spool *s, size_t max_rows, size_t max_bytes,
		     inbox_spool_load_fn load, void *ctx, size_t *loaded,
		     size_t *lost, struct error *err)
{
	struct batch b = { .max_rows = max_rows > 0 ? max_rows : 1 };
	int rc = 0;
	bool whole;

	*loaded = *lost = 0;
	b.entries = calloc(b.max_rows, sizeof(*b.entries));
	b.rows = calloc(b.max_rows, sizeof(*b.rows));
	if (b.entries == NULL || b.rows == NULL) {
		rc = error_set(err, "inbox spool: out of memory");
		goto out;
	}
	if (s->fd >= 0 && s->end > s->loaded) {
		rc = load_file(s->fd, s->path, &b, max_bytes, load, ctx, loaded,
			       lost, &whole, err);
		if (whole) {
			/* Emptied, not removed: this process writes on. */
			if (ftruncate(s->fd, HEADER_BYTES) != 0 ||
			    write_header(s->fd, HEADER_BYTES) != 0) {
				rc = error_set(err, "inbox spool: emptying %s: "
					       "%s", s->path, strerror(errno));
				goto out;
			}
			s->end = HEADER_BYTES;
		}
		/* Read back from the header: how far the batches went. */
		if (!whole) {
			char h[HEADER_BYTES];

			if (read_at(s->fd, h, sizeof(h), 0) == 1)
				memcpy(&s->loaded, h + 8, 8);
		} else {
			s->loaded = HEADER_BYTES;
		}
		if (rc != 0)
			goto out;
	}
	rc = load_orphans(s, &b, max_bytes, load, ctx, loaded, lost, err);
out:
	free(b.buf);
	free(b.entries);
	free(b.rows);
	return rc;
}
