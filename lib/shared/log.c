/* log.c - one-line log records to stderr, a file or syslog, as text or JSON
 * (see log.h). JSON lines are built with json-c, so every string is escaped.
 */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <syslog.h>
#include <time.h>
#include <unistd.h>

#include <json-c/json.h>

#include "log.h"
#include "sharedfile.h"

#define LINE_MAX_BYTES 2048

enum log_target { TARGET_STDERR, TARGET_FILE, TARGET_SYSLOG };

enum log_level log_threshold = LOG_LEVEL_INFO;
static const char *log_program = "payhook";
static enum log_format log_format = LOG_FORMAT_TEXT;
static enum log_target log_target = TARGET_STDERR;
static int log_fd = STDERR_FILENO;
static char *log_path; /* the file, for log_reopen */
/* The file as opened (logrotate moving it is noticed by its inode), whether
 * this process made it, when its path was last looked at (monotonic
 * seconds), and whom a file made here belongs to. */
static dev_t log_dev;
static ino_t log_ino;
static bool log_created;
static time_t log_checked_s;
static struct sharedfile_owner log_owner;
static bool log_echo;

/* This process's id for the lines: getpid() is a system call at each call
 * (glibc keeps no copy), so it is asked once, and again in the child of a
 * fork (the pool manager forks its workers), which forget_pid makes 0. */
static pid_t log_pid;
static bool log_pid_kept; /* forget_pid registered */

static const char *const level_names[] = { "error", "warn", "info", "debug" };
static const int syslog_priorities[] = { LOG_ERR, LOG_WARNING, LOG_INFO,
					 LOG_DEBUG };

static void forget_pid(void)
{
	log_pid = 0;
}

static void keep_pid(void)
{
	log_pid_kept = pthread_atfork(NULL, NULL, forget_pid) == 0;
}

static long current_pid(void)
{
	static pthread_once_t once = PTHREAD_ONCE_INIT;

	(void)pthread_once(&once, keep_pid);
	if (!log_pid_kept)
		return (long)getpid();
	if (log_pid == 0)
		log_pid = getpid();
	return (long)log_pid;
}

void log_init(const char *program, enum log_level threshold)
{
	if (program != NULL)
		log_program = program;
	log_threshold = threshold;
}

void log_echo_errors(bool on)
{
	log_echo = on;
}

void log_set_format(enum log_format format)
{
	log_format = format;
}

static void close_target(void)
{
	if (log_target == TARGET_FILE && log_fd != STDERR_FILENO)
		close(log_fd);
	if (log_target == TARGET_SYSLOG)
		closelog();
	log_fd = STDERR_FILENO;
}

/* Makes fd (open on log_path, created by this process or not) the file
 * lines go to. */
static void use_file(int fd, bool created)
{
	struct stat st;

	close_target();
	log_fd = fd;
	log_target = TARGET_FILE;
	log_created = created;
	log_dev = 0;
	log_ino = 0;
	if (fstat(fd, &st) == 0) {
		log_dev = st.st_dev;
		log_ino = st.st_ino;
	}
}

int log_open_file(const char *path, struct error *err)
{
	bool created;
	struct error why;
	int fd = sharedfile_open(path, O_WRONLY | O_APPEND, 0640, &log_owner,
				 &created, &why);
	char *copy;

	if (fd < 0)
		return error_set(err, "log_file %s", why.message);
	copy = strdup(path);
	if (copy == NULL) {
		close(fd);
		return error_set(err, "log_file: out of memory");
	}
	use_file(fd, created);
	free(log_path);
	log_path = copy;
	return 0;
}

void log_set_file_owner(const struct sharedfile_owner *owner)
{
	log_owner = *owner;
	if (log_target == TARGET_FILE && log_created)
		(void)sharedfile_give(log_fd, &log_owner);
}

/* Says once, in the file still open, that the path now names a file this
 * process will not open (sharedfile_open's refusal): the lines stay where
 * they were. Not through emit: this runs inside it. */
static bool log_refused;
static void refused_line(const struct error *why)
{
	char line[sizeof(why->message) + 160];
	int n;

	if (log_refused)
		return;
	log_refused = true;
	n = snprintf(line, sizeof(line), "%s[%ld]: error log.c: log_file %s; "
		     "lines go on to the file opened before\n", log_program,
		     (long)getpid(), why->message);
	if (n > 0 && write(log_fd, line, (size_t)n < sizeof(line) ?
					 (size_t)n : sizeof(line) - 1) < 0) {
		/* Nowhere left to report it. */
	}
}

/* Before a line goes to the file, at most once a second: when its path
 * names another file now (logrotate moved it, and created a new one or
 * not), the line and the next go there. A path that cannot be opened
 * leaves the lines in the old file. */
static void follow_rotation(void)
{
	struct timespec now;
	struct stat st;
	struct error why;
	bool created;
	int fd;

	clock_gettime(CLOCK_MONOTONIC_COARSE, &now);
	if (now.tv_sec == log_checked_s || log_path == NULL)
		return;
	log_checked_s = now.tv_sec;
	if (stat(log_path, &st) == 0 && st.st_dev == log_dev &&
	    st.st_ino == log_ino)
		return;
	fd = sharedfile_open(log_path, O_WRONLY | O_APPEND, 0640, &log_owner,
			     &created, &why);
	if (fd >= 0) {
		use_file(fd, created);
		log_refused = false;
	} else {
		refused_line(&why);
	}
}

void log_open_syslog(void)
{
	close_target();
	openlog(log_program, LOG_PID | LOG_NDELAY, LOG_DAEMON);
	log_target = TARGET_SYSLOG;
}

int log_reopen(struct error *err)
{
	char *path;
	int rc;

	switch (log_target) {
	case TARGET_FILE:
		path = strdup(log_path);
		if (path == NULL)
			return error_set(err, "log_file: out of memory");
		rc = log_open_file(path, err);
		free(path);
		return rc;
	case TARGET_SYSLOG:
		log_open_syslog();
		return 0;
	case TARGET_STDERR:
		break;
	}
	return 0;
}

/* "2026-11-30T14:00:00.123Z" into out (at least 32 bytes). */
static void timestamp(char *out, size_t cap)
{
	struct timespec ts;
	struct tm tm;
	size_t n;

	clock_gettime(CLOCK_REALTIME, &ts);
	gmtime_r(&ts.tv_sec, &tm);
	n = strftime(out, cap, "%Y-%m-%dT%H:%M:%S", &tm);
	snprintf(out + n, cap - n, ".%03ldZ", ts.tv_nsec / 1000000);
}

static const char *basename_of(const char *file)
{
	const char *base = strrchr(file, '/');

	return base != NULL ? base + 1 : file;
}

/* Sends a finished line (without its newline) to the target. A log line is
 * one line: control bytes from input never split it. */
static void emit(enum log_level level, char *buf, size_t len)
{
	for (size_t i = 0; i < len; i++) {
		if ((unsigned char)buf[i] < 0x20 || buf[i] == 0x7f)
			buf[i] = '?';
	}
	if (log_target == TARGET_SYSLOG) {
		buf[len] = '\0';
		syslog(syslog_priorities[level], "%s", buf);
		return;
	}
	buf[len++] = '\n';
	if (log_echo && level == LOG_LEVEL_ERROR && log_target == TARGET_FILE &&
	    write(STDERR_FILENO, buf, len) < 0) {
		/* Nowhere left to report it. */
	}
	if (log_target == TARGET_FILE)
		follow_rotation();
	/* One write per line so lines from several workers do not interleave. */
	if (write(log_fd, buf, len) < 0) {
		/* Nowhere left to report it. */
	}
}

/* The text prefix: timestamp (files only), program[pid] (not for syslog,
 * which adds its own), level, source. Returns its length. */
static size_t text_prefix(enum log_level level, const char *file, int line,
			  char *buf, size_t cap)
{
	char when[40] = "";
	int used;

	if (log_target == TARGET_FILE) {
		timestamp(when, sizeof(when));
		strcat(when, " ");
	}
	if (log_target == TARGET_SYSLOG)
		used = snprintf(buf, cap, "%s %s:%d: ", level_names[level],
				basename_of(file), line);
	else
		used = snprintf(buf, cap, "%s%s[%ld]: %s %s:%d: ", when,
				log_program, current_pid(), level_names[level],
				basename_of(file), line);
	if (used < 0)
		return 0;
	return (size_t)used < cap ? (size_t)used : cap - 1;
}

/* The JSON object every line starts from; NULL when out of memory. */
static json_object *json_line(enum log_level level, const char *file, int line)
{
	json_object *obj = json_object_new_object();
	char when[40], src[128];

	if (obj == NULL)
		return NULL;
	timestamp(when, sizeof(when));
	snprintf(src, sizeof(src), "%s:%d", basename_of(file), line);
	json_object_object_add(obj, "time", json_object_new_string(when));
	json_object_object_add(obj, "level",
			       json_object_new_string(level_names[level]));
	json_object_object_add(obj, "program", json_object_new_string(log_program));
	json_object_object_add(obj, "pid", json_object_new_int64(current_pid()));
	json_object_object_add(obj, "src", json_object_new_string(src));
	return obj;
}

static void emit_json(enum log_level level, json_object *obj)
{
	char buf[LINE_MAX_BYTES + 1];
	const char *text = json_object_to_json_string_ext(
		obj, JSON_C_TO_STRING_PLAIN | JSON_C_TO_STRING_NOSLASHESCAPE);
	size_t len;

	if (text == NULL)
		return;
	len = strnlen(text, LINE_MAX_BYTES);
	memcpy(buf, text, len);
	emit(level, buf, len);
}

void log_write(enum log_level level, const char *file, int line,
	       const char *fmt, ...)
{
	char buf[LINE_MAX_BYTES + 1];
	size_t used;
	va_list ap;

	if (log_format == LOG_FORMAT_JSON) {
		json_object *obj = json_line(level, file, line);

		if (obj == NULL)
			return;
		va_start(ap, fmt);
		vsnprintf(buf, sizeof(buf), fmt, ap);
		va_end(ap);
		json_object_object_add(obj, "msg", json_object_new_string(buf));
		emit_json(level, obj);
		json_object_put(obj);
		return;
	}
	used = text_prefix(level, file, line, buf, sizeof(buf) - 1);
	va_start(ap, fmt);
	vsnprintf(buf + used, sizeof(buf) - 1 - used, fmt, ap);
	va_end(ap);
	emit(level, buf, strnlen(buf, sizeof(buf) - 1));
}

/* Whether a text value needs quotes to stay one word. */
static bool needs_quotes(const char *text)
{
	return text[0] == '\0' || strpbrk(text, " \t\"=\\") != NULL;
}

/* Writes sep key="text" into out, a quote inside text as \" and a
 * backslash as \\, so no value can end its quotes early and forge fields
 * for a logfmt reader. An escape that does not fit is left out whole.
 * Returns the length written, or -1. */
static int append_quoted(char *out, size_t cap, const char *sep,
			 const char *key, const char *text)
{
	int n = snprintf(out, cap, "%s%s=\"", sep, key);
	size_t used;

	if (n < 0)
		return -1;
	used = (size_t)n;
	for (const char *t = text; *t != '\0'; t++) {
		bool escape = *t == '"' || *t == '\\';

		if (used + 1 + escape >= cap)
			break;
		if (escape)
			out[used++] = '\\';
		out[used++] = *t;
	}
	if (used + 1 < cap)
		out[used++] = '"';
	if (cap > 0)
		out[used < cap ? used : cap - 1] = '\0';
	return (int)used;
}

void log_fields(enum log_level level, const char *file, int line,
		const struct log_field *fields, size_t count)
{
	char buf[LINE_MAX_BYTES + 1];
	size_t used, cap = sizeof(buf) - 1;

	if (log_format == LOG_FORMAT_JSON) {
		json_object *obj = json_line(level, file, line);

		if (obj == NULL)
			return;
		for (size_t i = 0; i < count; i++)
			json_object_object_add(
				obj, fields[i].key,
				fields[i].text != NULL ?
					json_object_new_string(fields[i].text) :
					json_object_new_int64(fields[i].number));
		emit_json(level, obj);
		json_object_put(obj);
		return;
	}
	used = text_prefix(level, file, line, buf, cap);
	for (size_t i = 0; i < count && used < cap; i++) {
		int n;

		if (fields[i].text == NULL)
			n = snprintf(buf + used, cap - used, "%s%s=%lld",
				     i == 0 ? "" : " ", fields[i].key,
				     fields[i].number);
		else if (needs_quotes(fields[i].text))
			n = append_quoted(buf + used, cap - used, i == 0 ? "" : " ",
					  fields[i].key, fields[i].text);
		else
			n = snprintf(buf + used, cap - used, "%s%s=%s",
				     i == 0 ? "" : " ", fields[i].key,
				     fields[i].text);
		if (n < 0)
			break;
		used += (size_t)n < cap - used ? (size_t)n : cap - used;
	}
	emit(level, buf, strnlen(buf, cap));
}
