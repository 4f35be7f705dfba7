/* options.h - a program's command line as one table, from which both
 * getopt_long's table and the usage (--help) are made, so that an option a
 * program takes is an option its usage shows: the one shape of payhook,
 * payhook-dispatch, payhook-reconcile and payhook-sign.
 *
 * The usage is the program's forms ("usage: NAME FORM", one a line), a
 * paragraph on what it does, then one entry a row: "-c, --config FILE" and
 * its help, wrapped. tests/unit/options.test holds each program's usage
 * against its man page.
 */
#ifndef PAYHOOK_OPTIONS_H
#define PAYHOOK_OPTIONS_H

#include <getopt.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

/* What options_parse returns when the program goes on. */
#define OPTIONS_GO_ON (-1)
/* The exit status of a usage error. */
#define OPTIONS_EXIT_USAGE 2
/* The value of --version (the programs' own values are letters and
 * 256 and up). */
#define OPTIONS_VERSION 0x10000
/* The most entries one table holds. */
#define OPTIONS_MAX 40

struct options_entry {
	const char *name;  /* the long name, without "--" */
	int has_arg;       /* no_argument, required_argument, optional_argument */
	/* What getopt_long returns for it. A letter is also the short
	 * option (-c); other values are 256 and up. */
	int val;
	const char *arg;   /* the argument's name in the usage; NULL: none */
	const char *help;  /* what it does (wrapped; may be long) */
};

/* The entries every program has. */
#define OPTIONS_ENTRY_CONFIG                                              \
	{ "config", required_argument, 'c', "FILE",                       \
	  "the configuration file (else $PAYHOOK_CONFIG)" }
#define OPTIONS_ENTRY_VERSION                                             \
	{ "version", no_argument, OPTIONS_VERSION, NULL,                  \
	  "print the version and exit" }
#define OPTIONS_ENTRY_HELP                                                \
	{ "help", no_argument, 'h', NULL, "print this text and exit" }

struct options_program {
	const char *name;     /* in the usage, --version and messages */
	/* The forms of the command line, after the name; NULL-terminated. */
	const char *const *forms;
	const char *about;    /* the text between the forms and the entries */
	const struct options_entry *entries;
	size_t count;         /* at most OPTIONS_MAX */
	/* After the entries (payhook-sign's samples); NULL: nothing. */
	void (*epilogue)(FILE *to);
	/* Unknown options and missing arguments said as "NAME: unknown
	 * option: X" (payhook-sign); false: in getopt's own words. */
	bool own_messages;
};

/* Writes the usage of p to `to`. Can't fail (write errors are to's). */
void options_usage(const struct options_program *p, FILE *to);

/* Reads argv's options with getopt_long and p's table: --help prints the
 * usage on standard output, --version the version; an unknown option, a
 * missing argument and an argument to an option that takes none are said
 * on standard error with the usage. Every other option is passed to
 * take(ctx, val, its argument or NULL), which returns OPTIONS_GO_ON or an
 * exit status that ends the reading. Returns OPTIONS_GO_ON with optind at
 * the first operand, or the exit status: 0 after --help or --version, 1
 * when standard output could not be written, OPTIONS_EXIT_USAGE after a
 * usage error, or take's. */
int options_parse(const struct options_program *p, int argc, char **argv,
		  int (*take)(void *ctx, int val, const char *arg), void *ctx);

/* "NAME: message" (unless fmt is NULL) and the usage on standard error.
 * Returns OPTIONS_EXIT_USAGE. */
int options_usage_error(const struct options_program *p, const char *fmt,
			...) __attribute__((format(printf, 2, 3)));

#endif
