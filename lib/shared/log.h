/* log.h - the one logging facility: one line per event, to standard error
 * (which the web server puts in its error log), to a file, or to syslog, as
 * text or as one JSON object per line.
 *
 * Text lines look like "payhook[PID]: LEVEL file.c:42: message"; lines
 * written to a file start with an ISO 8601 UTC timestamp with milliseconds.
 * Formatting is skipped entirely below the configured level. Never pass
 * secrets or signatures to it.
 */
#ifndef PAYHOOK_LOG_H
#define PAYHOOK_LOG_H

#include <stddef.h>

#include "error.h"
#include "sharedfile.h"

enum log_level {
	LOG_LEVEL_ERROR = 0,
	LOG_LEVEL_WARN = 1,
	LOG_LEVEL_INFO = 2,
	LOG_LEVEL_DEBUG = 3,
};

enum log_format {
	LOG_FORMAT_TEXT = 0, /* "key=value" words after the prefix */
	LOG_FORMAT_JSON,     /* one JSON object per line */
};

/* The current threshold; read by the macros below, set by log_init. */
extern enum log_level log_threshold;

/* Sets the program name that prefixes each line (not copied: must outlive
 * logging) and the threshold. Can't fail. */
void log_init(const char *program, enum log_level threshold);

/* Chooses text or JSON lines. Can't fail. */
void log_set_format(enum log_format format);

/* Sends log lines to the file at path (created 0640 if missing, for the
 * owner of log_set_file_owner; appended to, one write(2) per line so workers
 * sharing it never interleave) instead of where they went. The path is kept
 * for log_reopen, and looked at again at most once a second before a line
 * is written: once logrotate has moved the file, the lines go to the file
 * at the path (created when missing), with no signal needed. Returns 0, or
 * -1 with err naming the path and the system error (the previous target
 * stays). */
int log_open_file(const char *path, struct error *err);

/* Whom a log file this process creates belongs to (a master started as
 * root: its workers' user and group), from now on; the file it created
 * already is given to them too. Can't fail (a file that cannot be given
 * stays as it is). */
void log_set_file_owner(const struct sharedfile_owner *owner);

/* Sends log lines to syslog(3) (facility daemon), which journald collects.
 * Can't fail. */
void log_open_syslog(void);

/* While on, an error line also goes to standard error when the lines go
 * to log_file or syslog: a program's start-up errors reach the terminal or
 * the journal, not only a file nobody reads before it is running. Off by
 * default; a program turns it off once it is running. */
void log_echo_errors(bool on);

/* Reopens the current target: the file by its path (after logrotate moved
 * it), or the syslog connection; nothing for standard error. Returns 0, or
 * -1 with err set (the old target stays). */
int log_reopen(struct error *err);

/* Writes one line. Use the macros, which skip the call below the threshold. */
void log_write(enum log_level level, const char *file, int line,
	       const char *fmt, ...) __attribute__((format(printf, 4, 5)));

/* One named value of a structured line. */
struct log_field {
	const char *key;
	const char *text; /* when not NULL, a string; else number */
	long long number;
};

#define LOG_TEXT(k, v) { (k), (v) != NULL ? (v) : "-", 0 }
#define LOG_NUMBER(k, v) { (k), NULL, (long long)(v) }

/* Writes one structured line: "key=value ..." in text (strings with white
 * space or quotes written in quotes), the fields as members of the object in
 * JSON. Use log_fields_at, which skips the call below the threshold. */
void log_fields(enum log_level level, const char *file, int line,
		const struct log_field *fields, size_t count);

#define log_fields_at(level, fields, count)                                  \
	do {                                                                 \
		if ((level) <= log_threshold)                                \
			log_fields((level), __FILE__, __LINE__, (fields),     \
				   (count));                                 \
	} while (0)

#define log_at(level, ...)                                                   \
	do {                                                                 \
		if ((level) <= log_threshold)                                \
			log_write((level), __FILE__, __LINE__, __VA_ARGS__); \
	} while (0)

#define log_error(...) log_at(LOG_LEVEL_ERROR, __VA_ARGS__)
#define log_warn(...) log_at(LOG_LEVEL_WARN, __VA_ARGS__)
#define log_info(...) log_at(LOG_LEVEL_INFO, __VA_ARGS__)
#define log_debug(...) log_at(LOG_LEVEL_DEBUG, __VA_ARGS__)

#endif
