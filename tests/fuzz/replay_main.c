/* replay_main.c - runs a fuzz target on saved inputs without libFuzzer, so
 * `make check` replays the corpora with the normal compiler.
 *
 * Usage: replay_X DIR|FILE...  Every regular file (directories are read one
 * level deep, names starting with '.' skipped) goes through
 * LLVMFuzzerTestOneInput once, from its own exactly-sized heap buffer so that
 * a sanitizer or valgrind sees any read past the end. A broken invariant
 * aborts, which is the failure. Prints how many inputs ran.
 */
#include "config.h"

#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "fuzz.h"

/* Reads path into a new buffer of exactly its size. Returns 0, or -1 with
 * a message printed. */
static int read_file(const char *path, unsigned char **out, size_t *out_len)
{
	unsigned char *buf = NULL;
	size_t len = 0, cap = 0;
	FILE *f = fopen(path, "rb");

	if (f == NULL) {
		fprintf(stderr, "replay: %s: %s\n", path, strerror(errno));
		return -1;
	}
	for (;;) {
		unsigned char chunk[4096];
		size_t n = fread(chunk, 1, sizeof(chunk), f);
		unsigned char *grown;

		if (n == 0)
			break;
		if (len + n > cap) {
			cap = len + n;
			grown = realloc(buf, cap);
			if (grown == NULL) {
				fprintf(stderr, "replay: out of memory\n");
				free(buf);
				fclose(f);
				return -1;
			}
			buf = grown;
		}
		memcpy(buf + len, chunk, n);
		len += n;
	}
	if (ferror(f)) {
		fprintf(stderr, "replay: %s: read error\n", path);
		free(buf);
		fclose(f);
		return -1;
	}
	fclose(f);
	*out = buf; /* NULL for an empty file: the target gets size 0 */
	*out_len = len;
	return 0;
}

static int run_file(const char *path, unsigned long *count)
{
	unsigned char *buf;
	size_t len;

	if (read_file(path, &buf, &len) != 0)
		return -1;
	/* An empty input still needs a valid pointer. */
	LLVMFuzzerTestOneInput(buf != NULL ? buf : (const unsigned char *)"",
			       len);
	free(buf);
	(*count)++;
	return 0;
}

static int compare_names(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/* Runs every regular file in dir, in name order so runs are repeatable. */
static int run_dir(const char *dir, unsigned long *count)
{
	char **names = NULL;
	size_t n = 0, cap = 0;
	struct dirent *e;
	int rc = 0;
	DIR *d = opendir(dir);

	if (d == NULL) {
		fprintf(stderr, "replay: %s: %s\n", dir, strerror(errno));
		return -1;
	}
	while ((e = readdir(d)) != NULL) {
		if (e->d_name[0] == '.')
			continue;
		if (n == cap) {
			char **grown;

			cap = cap == 0 ? 64 : cap * 2;
			grown = realloc(names, cap * sizeof(*names));
			if (grown == NULL) {
				rc = -1;
				break;
			}
			names = grown;
		}
		names[n] = strdup(e->d_name);
		if (names[n] == NULL) {
			rc = -1;
			break;
		}
		n++;
	}
	closedir(d);
	if (rc != 0)
		fprintf(stderr, "replay: out of memory listing %s\n", dir);
	if (n > 0)
		qsort(names, n, sizeof(*names), compare_names);
	for (size_t i = 0; i < n; i++) {
		size_t plen = strlen(dir) + strlen(names[i]) + 2;
		char *path = malloc(plen);
		struct stat st;

		if (path == NULL) {
			rc = -1;
		} else {
			snprintf(path, plen, "%s/%s", dir, names[i]);
			if (stat(path, &st) == 0 && S_ISREG(st.st_mode) &&
			    run_file(path, count) != 0)
				rc = -1;
		}
		free(path);
		free(names[i]);
	}
	free(names);
	return rc;
}

int main(int argc, char **argv)
{
	unsigned long count = 0;
	int rc = 0;

	if (argc < 2) {
		fprintf(stderr, "usage: %s DIR|FILE...\n", argv[0]);
		return 2;
	}
	LLVMFuzzerInitialize(&argc, &argv);
	for (int i = 1; i < argc; i++) {
		struct stat st;

		if (stat(argv[i], &st) != 0) {
			fprintf(stderr, "replay: %s: %s\n", argv[i],
				strerror(errno));
			rc = 1;
		} else if (S_ISDIR(st.st_mode)) {
			if (run_dir(argv[i], &count) != 0)
				rc = 1;
		} else if (run_file(argv[i], &count) != 0) {
			rc = 1;
		}
	}
	printf("replay: %lu inputs ran\n", count);
	return rc;
}
