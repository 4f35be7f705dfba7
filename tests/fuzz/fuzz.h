/* fuzz.h - what every payhook fuzz target gives libFuzzer and the corpus
 * replay driver (replay_main.c), and the check that turns a broken invariant
 * into an abort, which both report as a crash.
 */
#ifndef PAYHOOK_FUZZ_H
#define PAYHOOK_FUZZ_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

/* Called once before the first input (libFuzzer and replay_main alike). */
int LLVMFuzzerInitialize(int *argc, char ***argv);

/* Runs one input; aborts when an invariant breaks. Returns 0. */
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* Aborts with file, line, the condition and a printf-formatted detail. */
#define FUZZ_CHECK(cond, ...)                                                \
	do {                                                                 \
		if (!(cond)) {                                               \
			fprintf(stderr, "%s:%d: invariant broken: %s: ",     \
				__FILE__, __LINE__, #cond);                  \
			fprintf(stderr, __VA_ARGS__);                        \
			fputc('\n', stderr);                                 \
			abort();                                             \
		}                                                            \
	} while (0)

/* Set-up that cannot go on (out of memory at start-up, say). */
#define FUZZ_FATAL(...)                                                      \
	do {                                                                 \
		fprintf(stderr, "fuzz: " __VA_ARGS__);                       \
		fputc('\n', stderr);                                         \
		exit(2);                                                     \
	} while (0)

#endif
