/* options.c - a program's option table made into getopt_long's table and
 * into its usage (see options.h).
 */
#include "config.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "options.h"

/* The usage's width, and the column the entries' help starts at (at
 * most). */
#define WIDTH 79
#define HELP_COLUMN_MAX 28

/* The length of the word at p: up to a space or a line's end, a bracket's
 * content kept whole ("[--user USER]"). */
static size_t word_length(const char *p)
{
	size_t len = 0;
	int depth = 0;

	for (; p[len] != '\0'; len++) {
		if (p[len] == '[')
			depth++;
		else if (p[len] == ']' && depth > 0)
			depth--;
		else if ((p[len] == ' ' || p[len] == '\n') && depth == 0)
			break;
	}
	return len;
}

/* Writes text's words from column col, each after a space, wrapped at
 * WIDTH onto lines indented by indent. Returns the column it ends at. */
static int wrap(FILE *to, const char *text, int col, int indent)
{
	const char *p = text;
	bool line_start = false;

	for (;;) {
		size_t len;

		p += strspn(p, " \n");
		len = word_length(p);
		if (len == 0)
			return col;
		if (!line_start && col + 1 + (int)len > WIDTH && col > indent) {
			fprintf(to, "\n%*s", indent, "");
			col = indent;
			line_start = true;
		}
		if (!line_start) {
			fputc(' ', to);
			col++;
		}
		fwrite(p, 1, len, to);
		col += (int)len;
		p += len;
		line_start = false;
	}
}

/* An entry's left column: "-c, --config FILE", "    --once[=SECONDS]". */
static void entry_left(const struct options_entry *e, char *out, size_t cap)
{
	bool optional = e->has_arg == optional_argument;

	if (e->val < 256)
		snprintf(out, cap, "-%c, --%s", (char)e->val, e->name);
	else
		snprintf(out, cap, "    --%s", e->name);
	if (e->arg != NULL)
		snprintf(out + strlen(out), cap - strlen(out), "%s%s%s",
			 optional ? "[=" : " ", e->arg, optional ? "]" : "");
}

void options_usage(const struct options_program *p, FILE *to)
{
	char left[64];
	int column = 0;

	for (size_t i = 0; p->forms[i] != NULL; i++) {
		int col = fprintf(to, "%s%s", i == 0 ? "usage: " : "       ",
				  p->name);
		/* Continued under the form's second word. */
		int indent = col + 1 + (int)word_length(p->forms[i]) + 1;

		wrap(to, p->forms[i], col, indent > 40 ? 40 : indent);
		fputc('\n', to);
	}
	fprintf(to, "\n%s\n", p->about);
	/* The help starts two columns after the widest left column. */
	for (size_t i = 0; i < p->count; i++) {
		entry_left(&p->entries[i], left, sizeof(left));
		if (2 + (int)strlen(left) + 2 > column)
			column = 2 + (int)strlen(left) + 2;
	}
	if (column > HELP_COLUMN_MAX)
		column = HELP_COLUMN_MAX;
	for (size_t i = 0; i < p->count; i++) {
		int col;

		entry_left(&p->entries[i], left, sizeof(left));
		col = fprintf(to, "  %s", left);
		if (col + 2 > column) {
			fputc('\n', to);
			col = 0;
		}
		fprintf(to, "%*s", column - col - 1, "");
		wrap(to, p->entries[i].help, column - 1, column);
		fputc('\n', to);
	}
	if (p->epilogue != NULL) {
		fputc('\n', to);
		p->epilogue(to);
	}
}

int options_usage_error(const struct options_program *p, const char *fmt,
			...)
{
	if (fmt != NULL) {
		va_list ap;

		fprintf(stderr, "%s: ", p->name);
		va_start(ap, fmt);
		vfprintf(stderr, fmt, ap);
		va_end(ap);
		fputc('\n', stderr);
	}
	options_usage(p, stderr);
	return OPTIONS_EXIT_USAGE;
}

/* getopt_long's '?' or ':' said in the program's words: the option as
 * written (a short one, or the word a long one came in). */
static int own_error(const struct options_program *p, int opt, char **argv)
{
	const char *word = argv[optind - 1];
	char shortopt[3] = { '-', (char)optopt, '\0' };

	if (optopt != 0 && optopt < 256 && strncmp(word, "--", 2) != 0)
		word = shortopt;
	return options_usage_error(p, "%s: %s", opt == ':' ?
				   "option needs an argument" :
				   "unknown option", word);
}

int options_parse(const struct options_program *p, int argc, char **argv,
		  int (*take)(void *ctx, int val, const char *arg), void *ctx)
{
	struct option longs[OPTIONS_MAX + 1];
	char shorts[3 * OPTIONS_MAX + 2];
	size_t n = 0, count = p->count < OPTIONS_MAX ? p->count : OPTIONS_MAX;
	int opt;

	/* With a leading ':', a missing argument is ':', not '?'. */
	if (p->own_messages)
		shorts[n++] = ':';
	for (size_t i = 0; i < count; i++) {
		const struct options_entry *e = &p->entries[i];

		longs[i] = (struct option){ e->name, e->has_arg, NULL, e->val };
		if (e->val >= 256)
			continue;
		shorts[n++] = (char)e->val;
		if (e->has_arg != no_argument)
			shorts[n++] = ':';
		if (e->has_arg == optional_argument)
			shorts[n++] = ':';
	}
	shorts[n] = '\0';
	memset(&longs[count], 0, sizeof(longs[count]));
	opterr = !p->own_messages;
	while ((opt = getopt_long(argc, argv, shorts, longs, NULL)) != -1) {
		int rc;

		switch (opt) {
		case 'h':
			options_usage(p, stdout);
			return fflush(stdout) == 0 ? 0 : 1;
		case OPTIONS_VERSION:
			printf("%s %s\n", p->name, PACKAGE_VERSION);
			return fflush(stdout) == 0 ? 0 : 1;
		case '?':
		case ':':
			if (p->own_messages)
				return own_error(p, opt, argv);
			options_usage(p, stderr);
			return OPTIONS_EXIT_USAGE;
		default:
			rc = take(ctx, opt, optarg);
			if (rc != OPTIONS_GO_ON)
				return rc;
		}
	}
	return OPTIONS_GO_ON;
}
