/* dispatch_check.h - payhook-dispatch --check-config: the files it opens,
 * the target, the alerts, the lease, each MySQL node, the schema and the
 * tables of the later migrations, one line a check on standard output
 * ("what: ok (...)", "what: WARNING: ...", "what: FAILED: ..."). It
 * creates nothing.
 */
#ifndef PAYHOOK_DISPATCH_CHECK_H
#define PAYHOOK_DISPATCH_CHECK_H

#include "configuration.h"

/* Runs every check of cfg (read from path; NULL: defaults and the
 * environment). Returns 0 when none FAILED, else 1. */
int dispatch_check_config(const struct config *cfg, const char *path);

#endif
