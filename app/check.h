/* check.h - payhook --check-config: the configuration, the files a worker
 * opens, the alerts' sender, Redis (each sentinel, then the server), each
 * MySQL node and the schema, one line a check on standard output
 * ("what: ok (...)", "what: WARNING: ...", "what: FAILED: ..."). It
 * creates nothing.
 */
#ifndef PAYHOOK_CHECK_H
#define PAYHOOK_CHECK_H

#include "configuration.h"

/* Runs every check of cfg (read from path; NULL: defaults and the
 * environment). Returns 0 when none FAILED, else 1. */
int check_config(const struct config *cfg, const char *path);

#endif
