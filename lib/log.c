/* log.c - one-line log records on stderr (see log.h). */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#include "log.h"

enum log_level log_threshold = LOG_LEVEL_INFO;
static const char *log_program = "payhook";
static int log_fd = STDERR_FILENO;

static const char *const level_names[] = { "error", "warn", "info", "debug" };

void log_init(const char *program, enum log_level threshold)
{
	if (program != NULL)
		log_program = program;
	log_threshold = threshold;
}

int log_open_file(const char *path, struct error *err)
{
	int fd = open(path, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0640);

	if (fd < 0)
		return error_set(err, "log_file %s: %s", path, strerror(errno));
	if (log_fd != STDERR_FILENO)
		close(log_fd);
	log_fd = fd;
	return 0;
}

int log_level_parse(const char *text, enum log_level *out)
{
	for (size_t i = 0; i < sizeof(level_names) / sizeof(level_names[0]); i++) {
		if (strcasecmp(text, level_names[i]) == 0) {
			*out = (enum log_level)i;
			return 0;
		}
	}
	return -1;
}

void log_write(enum log_level level, const char *file, int line,
	       const char *fmt, ...)
{
	char buf[1024];
	int used;
	va_list ap;
	const char *base = strrchr(file, '/');

	base = base != NULL ? base + 1 : file;
	used = snprintf(buf, sizeof(buf), "%s[%ld]: %s %s:%d: ", log_program,
			(long)getpid(), level_names[level], base, line);
	if (used < 0)
		return;
	if ((size_t)used < sizeof(buf)) {
		va_start(ap, fmt);
		vsnprintf(buf + used, sizeof(buf) - (size_t)used, fmt, ap);
		va_end(ap);
	}
	/* One write per line so lines from several workers do not interleave. */
	size_t len = strnlen(buf, sizeof(buf) - 2);
	for (size_t i = 0; i < len; i++) {
		/* A log line is one line: control bytes from input never split it. */
		if ((unsigned char)buf[i] < 0x20 || buf[i] == 0x7f)
			buf[i] = '?';
	}
	buf[len++] = '\n';
	if (write(log_fd, buf, len) < 0) {
		/* Nowhere left to report it. */
	}
}
