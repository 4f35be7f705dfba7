/* test_log.c - the text log line as a logfmt reader sees it: whatever a
 * value holds (quotes, backslashes, '=', control bytes), it stays one value
 * and no field can be forged. */
#include "config.h"

#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "log.h"

static char tmp_dir[64];
static char log_path[128];

static void setup(void)
{
	struct error err;

	strcpy(tmp_dir, "/tmp/test_log.XXXXXX");
	ck_assert_ptr_nonnull(mkdtemp(tmp_dir));
	snprintf(log_path, sizeof(log_path), "%s/payhook.log", tmp_dir);
	log_init("test_log", LOG_LEVEL_INFO);
	log_set_format(LOG_FORMAT_TEXT);
	ck_assert_msg(log_open_file(log_path, &err) == 0, "%s", err.message);
}

static void teardown(void)
{
	unlink(log_path);
	rmdir(tmp_dir);
}

/* The last line of the log, without its newline. */
static void last_line(char *out, size_t cap)
{
	FILE *f = fopen(log_path, "r");
	char line[4096];

	ck_assert_ptr_nonnull(f);
	out[0] = '\0';
	while (fgets(line, sizeof(line), f) != NULL) {
		line[strcspn(line, "\n")] = '\0';
		snprintf(out, cap, "%s", line);
	}
	fclose(f);
}

struct pair {
	char key[64];
	char value[1024];
};

/* Reads line as logfmt does (go-logfmt's rules): key, then '=' and a value
 * that is either bare (up to a space) or quoted with backslash escapes.
 * Words without '=' are keys without a value. Returns the number of pairs. */
static size_t logfmt_read(const char *line, struct pair *pairs, size_t cap)
{
	size_t n = 0;
	const char *p = line;

	while (*p != '\0' && n < cap) {
		size_t k = 0, v = 0;

		while (*p == ' ')
			p++;
		if (*p == '\0')
			break;
		while (*p != '\0' && *p != ' ' && *p != '=' && *p != '"' &&
		       k + 1 < sizeof(pairs[n].key))
			pairs[n].key[k++] = *p++;
		pairs[n].key[k] = '\0';
		pairs[n].value[0] = '\0';
		if (*p == '=') {
			p++;
			if (*p == '"') {
				p++;
				while (*p != '\0' && *p != '"') {
					if (*p == '\\' && p[1] != '\0')
						p++;
					if (v + 1 < sizeof(pairs[n].value))
						pairs[n].value[v++] = *p;
					p++;
				}
				if (*p == '"')
					p++;
			} else {
				while (*p != '\0' && *p != ' ' &&
				       v + 1 < sizeof(pairs[n].value))
					pairs[n].value[v++] = *p++;
			}
			pairs[n].value[v] = '\0';
		} else if (*p != ' ' && *p != '\0') {
			p++; /* a stray quote: skip it */
		}
		n++;
	}
	return n;
}

/* How often key appears in the pairs; *value gets its last value. */
static int count_key(const struct pair *pairs, size_t n, const char *key,
		     const char **value)
{
	int count = 0;

	for (size_t i = 0; i < n; i++) {
		if (strcmp(pairs[i].key, key) == 0) {
			count++;
			*value = pairs[i].value;
		}
	}
	return count;
}

START_TEST(test_value_cannot_forge_fields)
{
	static const char *const values[] = {
		/* a quote ending the value early, after a backslash that
		 * used to escape the escaping quote */
		"x\\\" outcome=processed transaction_id=pi_victim",
		"x\" outcome=processed transaction_id=pi_victim",
		"x\\",
		"\\\\\" outcome=processed",
		"a=b outcome=processed",
		"line\nbreak outcome=processed",
	};
	char line[4096];
	struct pair pairs[32];

	for (size_t i = 0; i < sizeof(values) / sizeof(values[0]); i++) {
		struct log_field fields[] = {
			LOG_TEXT("outcome", "invalid"),
			LOG_TEXT("event_type", values[i]),
			LOG_NUMBER("status", 400),
		};
		const char *value = NULL;
		size_t n;

		log_fields(LOG_LEVEL_INFO, __FILE__, __LINE__, fields, 3);
		last_line(line, sizeof(line));
		n = logfmt_read(line, pairs, 32);
		ck_assert_msg(count_key(pairs, n, "outcome", &value) == 1,
			      "value %zu forged an outcome: %s", i, line);
		ck_assert_str_eq(value, "invalid");
		ck_assert_msg(count_key(pairs, n, "transaction_id", &value) == 0,
			      "value %zu forged a transaction_id: %s", i, line);
		ck_assert_int_eq(count_key(pairs, n, "event_type", &value), 1);
		/* The value reads back as written (control bytes are '?'). */
		if (strchr(values[i], '\n') == NULL)
			ck_assert_str_eq(value, values[i]);
		ck_assert_int_eq(count_key(pairs, n, "status", &value), 1);
		ck_assert_str_eq(value, "400");
	}
}
END_TEST

/* Each line names the process that wrote it, a child forked after its
 * parent wrote lines too (the pool manager's workers). */
START_TEST(test_line_names_its_process)
{
	char line[4096], want[64];
	pid_t child;
	int status;

	log_info("the parent");
	last_line(line, sizeof(line));
	snprintf(want, sizeof(want), "test_log[%ld]: ", (long)getpid());
	ck_assert_msg(strstr(line, want) != NULL, "%s", line);
	child = fork();
	ck_assert_int_ge(child, 0);
	if (child == 0) {
		log_info("the child");
		_exit(0);
	}
	ck_assert_int_eq(waitpid(child, &status, 0), child);
	last_line(line, sizeof(line));
	snprintf(want, sizeof(want), "test_log[%ld]: ", (long)child);
	ck_assert_msg(strstr(line, want) != NULL && strstr(line, "the child"),
		      "%s", line);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("log");
	TCase *tc = tcase_create("text");
	SRunner *sr;
	int failed;

	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_add_test(tc, test_value_cannot_forge_fields);
	tcase_add_test(tc, test_line_names_its_process);
	suite_add_tcase(s, tc);
	sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}
