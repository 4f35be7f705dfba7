/* route.h - which part of payhook answers a request, by its path: the one
 * place where paths are read. An operator's path (health_path, ping_path,
 * metrics_path, status_path, status_page_path) is compared whole and goes to
 * ops; anything else is a webhook, whose profile is the path's last segment
 * when that names a provider, the standard profile otherwise.
 */
#ifndef PAYHOOK_ROUTE_H
#define PAYHOOK_ROUTE_H

#include "configuration.h"
#include "request.h"

enum route_target {
	ROUTE_WEBHOOK = 0, /* the pipeline, for route.provider */
	ROUTE_HEALTH,
	ROUTE_PING,
	ROUTE_METRICS,
	ROUTE_STATUS,
	ROUTE_PAGE,
};

struct route {
	enum route_target target;
	/* ROUTE_WEBHOOK: the profile the path names (whether it is enabled
	 * is the pipeline's to say) */
	enum config_provider provider;
};

/* Fills out with where req goes under cfg. Can't fail: a path that names
 * nothing is the standard profile's webhook. */
void route_request(const struct config *cfg, const struct request *req,
		   struct route *out);

/* The cross-key checks of the operator's paths (health_path, ping_path,
 * metrics_path, status_path, status_page_path) and their tokens: each path
 * a request path, a token only with a path it guards, the page never
 * without one. Returns 0, or -1 with err saying what to change. */
int route_check_config(const struct config *cfg, struct error *err);

/* The profile a webhook's path names: its last segment when that is a
 * provider's name, else the standard profile. Can't fail. */
enum config_provider route_profile(const struct request *req);

#endif
