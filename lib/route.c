/* route.c - where a request goes, by its path (see route.h). */
#include "config.h"

#include <stdbool.h>
#include <string.h>

#include "route.h"

/* The longest operator's path compared; a longer request path is none. */
#define ROUTE_PATH_MAX 512

static bool is_path(const char *key, const char *path)
{
	return key != NULL && strcmp(path, key) == 0;
}

enum config_provider route_profile(const struct request *req)
{
	char segment[REQUEST_SEGMENT_MAX + 1];

	request_profile_segment(req, segment);
	for (unsigned i = 0; i < CONFIG_PROVIDER_COUNT; i++) {
		if (strcmp(segment, config_provider_name(i)) == 0)
			return (enum config_provider)i;
	}
	return CONFIG_PROVIDER_STANDARD;
}

void route_request(const struct config *cfg, const struct request *req,
		   struct route *out)
{
	char path[ROUTE_PATH_MAX];

	out->target = ROUTE_WEBHOOK;
	/* Most deployments name no operator's path: no path copied. */
	if (cfg->health_path != NULL || cfg->ping_path != NULL ||
	    cfg->metrics_path != NULL || cfg->status_path != NULL ||
	    cfg->status_page_path != NULL) {
		request_path(req, path, sizeof(path));
		if (is_path(cfg->health_path, path))
			out->target = ROUTE_HEALTH;
		else if (is_path(cfg->ping_path, path))
			out->target = ROUTE_PING;
		else if (is_path(cfg->metrics_path, path))
			out->target = ROUTE_METRICS;
		else if (is_path(cfg->status_path, path))
			out->target = ROUTE_STATUS;
		else if (is_path(cfg->status_page_path, path))
			out->target = ROUTE_PAGE;
	}
	out->provider = out->target == ROUTE_WEBHOOK ? route_profile(req)
						     : CONFIG_PROVIDER_STANDARD;
}
