/* scoreboard.c - the atomics the segment's writers and readers share (see
 * scoreboard.h): the histogram's buckets, sequence locks, text in words.
 * Lock-free 64-bit atomics are address-free on the platforms payhook runs
 * on, so every process may map the segment anywhere.
 */
#include "config.h"

#include <errno.h>
#include <signal.h>
#include <string.h>

#include "scoreboard.h"

/* Upper bounds of the latency histograms, in microseconds. */
static const int64_t bucket_us[SCOREBOARD_BUCKETS] = {
	1000, 2500, 5000, 10000, 25000, 50000, 100000, 250000, 500000,
	1000000, 2500000, 5000000, 10000000,
};

int64_t scoreboard_bucket_us(size_t b)
{
	return b < SCOREBOARD_BUCKETS ? bucket_us[b] : INT64_MAX;
}

void scoreboard_observe(atomic_ullong *buckets, atomic_ullong *count,
			atomic_ullong *sum_us, int64_t elapsed_us)
{
	size_t b;

	for (b = 0; b < SCOREBOARD_BUCKETS && elapsed_us > bucket_us[b]; b++)
		;
	if (b < SCOREBOARD_BUCKETS)
		scoreboard_add(&buckets[b]);
	scoreboard_add(count);
	atomic_fetch_add_explicit(sum_us,
				  elapsed_us > 0 ? (unsigned long long)elapsed_us
						 : 0,
				  memory_order_relaxed);
}

bool scoreboard_pid_alive(int pid)
{
	return pid > 0 && (kill(pid, 0) == 0 || errno == EPERM);
}

void scoreboard_store_words(atomic_ullong *dst, size_t nwords,
			    const char *text, size_t len)
{
	uint64_t word;

	if (len > nwords * 8 - 1)
		len = nwords * 8 - 1;
	for (size_t w = 0; w <= len / 8; w++) {
		size_t from = w * 8, n = len - from < 8 ? len - from : 8;

		word = 0;
		memcpy(&word, text + from, n);
		atomic_store_explicit(&dst[w], word, memory_order_relaxed);
	}
}

void scoreboard_load_words(const atomic_ullong *src, size_t nwords,
			   char *out)
{
	for (size_t w = 0; w < nwords; w++) {
		uint64_t word = atomic_load_explicit(&src[w],
						     memory_order_relaxed);

		memcpy(out + w * 8, &word, 8);
	}
	out[nwords * 8 - 1] = '\0';
}

unsigned scoreboard_write_begin(atomic_uint *seq)
{
	unsigned before = atomic_fetch_add_explicit(seq, 1,
						    memory_order_relaxed);

	atomic_thread_fence(memory_order_release);
	return before;
}

void scoreboard_write_end(atomic_uint *seq)
{
	atomic_thread_fence(memory_order_release);
	atomic_fetch_add_explicit(seq, 1, memory_order_relaxed);
}

unsigned scoreboard_read_begin(const atomic_uint *seq)
{
	return atomic_load_explicit(seq, memory_order_acquire);
}

bool scoreboard_read_end(const atomic_uint *seq, unsigned before)
{
	atomic_thread_fence(memory_order_acquire);
	return before % 2 == 0 &&
	       atomic_load_explicit(seq, memory_order_relaxed) == before;
}
