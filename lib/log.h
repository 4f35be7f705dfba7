/* log.h - the one logging function: one line per event to stderr, which the
 * web server puts in its error log.
 *
 * Lines look like "payhook[PID]: LEVEL file.c:42: message". Formatting is
 * skipped entirely below the configured level. Never pass secrets or
 * signatures to it.
 */
#ifndef PAYHOOK_LOG_H
#define PAYHOOK_LOG_H

#include "error.h"

enum log_level {
	LOG_LEVEL_ERROR = 0,
	LOG_LEVEL_WARN = 1,
	LOG_LEVEL_INFO = 2,
	LOG_LEVEL_DEBUG = 3,
};

/* The current threshold; read by the macros below, set by log_init. */
extern enum log_level log_threshold;

/* Sets the program name that prefixes each line (not copied: must outlive
 * logging) and the threshold. Can't fail. */
void log_init(const char *program, enum log_level threshold);

/* Sends log lines to the file at path (created 0640, appended to, one
 * write(2) per line so workers sharing it never interleave) instead of stderr.
 * Returns 0, or -1 with err naming the path and the system error. */
int log_open_file(const char *path, struct error *err);

/* Parses "error", "warn", "info" or "debug". Returns 0, or -1 for anything
 * else (out untouched). */
int log_level_parse(const char *text, enum log_level *out);

/* Writes one line. Use the macros, which skip the call below the threshold. */
void log_write(enum log_level level, const char *file, int line,
	       const char *fmt, ...) __attribute__((format(printf, 4, 5)));

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
