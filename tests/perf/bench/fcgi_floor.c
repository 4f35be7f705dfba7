/* fcgi_floor.c - benchmark: an empty FastCGI responder. It reads the body
 * and answers 200 with a small JSON body like payhook's, and does nothing
 * else: run behind the same web server and spawn-fcgi pool as payhook, it
 * measures what HTTP and FastCGI alone cost.
 */
#include "config.h"

#include <signal.h>
#include <stdio.h>
#include <string.h>

#include <fcgiapp.h>

/* The shape of payhook's "processed" answer (lib/response.c). */
static const char answer[] =
	"Status: 200 OK\r\n"
	"Content-Type: application/json\r\n"
	"Cache-Control: no-store\r\n"
	"\r\n"
	"{\"result\":\"processed\",\"transaction_id\":\"floor-0000000000\"}\n";

int main(void)
{
	FCGX_Request req;
	char buf[16384];
	unsigned long served = 0;

	/* A client that went away must not kill the worker. */
	signal(SIGPIPE, SIG_IGN);
	if (FCGX_Init() != 0 || FCGX_InitRequest(&req, 0, 0) != 0) {
		fprintf(stderr, "fcgi_floor: FastCGI setup failed\n");
		return 1;
	}
	while (FCGX_Accept_r(&req) >= 0) {
		/* Drain the body, as payhook reads it before answering. */
		while (FCGX_GetStr(buf, (int)sizeof(buf), req.in) > 0)
			;
		FCGX_PutStr(answer, (int)sizeof(answer) - 1, req.out);
		FCGX_Finish_r(&req);
		served++;
	}
	FCGX_Free(&req, 1);
	fprintf(stderr, "fcgi_floor: exits after %lu requests\n", served);
	return 0;
}
