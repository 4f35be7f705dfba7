/* route.c - where a request goes, by its path (see route.h). */
#include "config.h"

#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "error.h"
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

/* A path key: unset, or a request path. */
static bool request_path_ok(const char *path)
{
	return path == NULL || path[0] == '/';
}

int route_check_config(const struct config *cfg, struct error *err)
{
	if (!request_path_ok(cfg->health_path) ||
	    !request_path_ok(cfg->metrics_path) ||
	    !request_path_ok(cfg->status_path) ||
	    !request_path_ok(cfg->ping_path) ||
	    !request_path_ok(cfg->status_page_path))
		return error_set(err, "health_path, metrics_path, status_path, "
				 "ping_path and status_page_path are request "
				 "paths: they start with /");
	if (cfg->status_page_token != NULL && cfg->status_page_path == NULL)
		return error_set(err, "status_page_token is set but "
				 "status_page_path is not");
	/* The page lists transaction ids: never without a token. */
	if (cfg->status_page_path != NULL && cfg->status_page_token == NULL &&
	    cfg->metrics_token == NULL)
		return error_set(err, "status_page_path needs a token: set "
				 "status_page_token (or metrics_token)");
	if (cfg->metrics_token != NULL && cfg->metrics_path == NULL &&
	    cfg->status_path == NULL)
		return error_set(err, "metrics_token is set but neither "
				 "metrics_path nor status_path is");
	/* Set but empty counts as unset (a metrics_token line still holds),
	 * but with no token anywhere it would make metrics_path public: a
	 * variable written to hold a token that came out empty. */
	if ((cfg->metrics_path != NULL || cfg->status_path != NULL) &&
	    cfg->metrics_token == NULL &&
	    getenv("PAYHOOK_METRICS_TOKEN") != NULL)
		return error_set(err, "environment PAYHOOK_METRICS_TOKEN is set "
				 "but empty and no metrics_token line gives a "
				 "token: metrics_path would be open to anyone; "
				 "give a token, or unset the variable to serve "
				 "it without one");
	return 0;
}
