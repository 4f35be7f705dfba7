/* trace.c - the tracer of tools/walk/walk.sh: a build with
 * -finstrument-functions calls these two hooks on every function's entry
 * and exit; with WALK_TRACE set they append "E OFFSET" / "X OFFSET" lines
 * (the function's address less its object's load address, in hex) to that
 * file, which walk.sh maps to functions and files with addr2line. Not built
 * by the Makefile; never part of a release. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>

#define NO_TRACE __attribute__((no_instrument_function))

static FILE *trace_out;
static int trace_state; /* 0 not yet looked, 1 on, -1 off */

NO_TRACE static void trace_line(char kind, void *fn)
{
	Dl_info info;
	unsigned long off;

	if (trace_state == 0) {
		const char *path = getenv("WALK_TRACE");

		trace_out = path != NULL ? fopen(path, "a") : NULL;
		trace_state = trace_out != NULL ? 1 : -1;
	}
	if (trace_state < 0)
		return;
	off = (unsigned long)fn;
	if (dladdr(fn, &info) != 0 && info.dli_fbase != NULL)
		off -= (unsigned long)info.dli_fbase;
	fprintf(trace_out, "%c %lx\n", kind, off);
	fflush(trace_out);
}

NO_TRACE void __cyg_profile_func_enter(void *fn, void *site);
NO_TRACE void __cyg_profile_func_exit(void *fn, void *site);

void __cyg_profile_func_enter(void *fn, void *site)
{
	(void)site;
	trace_line('E', fn);
}

void __cyg_profile_func_exit(void *fn, void *site)
{
	(void)site;
	trace_line('X', fn);
}
