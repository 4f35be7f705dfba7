/* alert.c - one JSON object per alert, sent once through a transport to
 * alert_url or alert_command (see alert.h). */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <json-c/json.h>

#include "alert.h"
#include "transport.h"
#include "transport_pick.h"
#include "utc.h"

struct alert {
	const char *program;
	struct transport *transport;  /* NULL: alerts off */
	unsigned long long sent;      /* for the alert's id */
};

static bool is_set(const char *value)
{
	return value != NULL && value[0] != '\0';
}

int alert_check_config(const struct config *cfg, struct error *err)
{
	bool url = is_set(cfg->alert_url), command = is_set(cfg->alert_command);

	if (url && command)
		return error_set(err, "both alert_url and alert_command are set: "
				 "set at most one of them");
	/* The URL is never quoted: it may carry a token. */
	if (url && !transport_url_valid(cfg->alert_url))
		return error_set(err, "alert_url must start with http:// or "
				 "https://");
	if (!url && cfg->alert_secret.count > 0)
		return error_set(err, "alert_secret signs the POSTs to alert_url: "
				 "set alert_url, or remove it");
	return 0;
}

struct alert *alert_new(const struct config *cfg, const char *program,
			struct error *err)
{
	const struct config_secrets *secret = cfg->alert_secret.count > 0
						      ? &cfg->alert_secret
						      : &cfg->dispatch_secret;
	struct transport_options options = {
		.url = cfg->alert_url,
		.command = cfg->alert_command,
		.timeout_ms = ALERT_TIMEOUT_MS,
		.secret = is_set(cfg->alert_url) && secret->count > 0
				  ? secret->items[0]
				  : NULL,
		.key_header = "Idempotency-Key",
		.key_variable = "PAYHOOK_ALERT_ID=",
		.env_prefix = "PAYHOOK_",
		.user_agent = "payhook-alert/" PACKAGE_VERSION,
		.program = program,
	};
	struct alert *a = calloc(1, sizeof(*a));

	if (a == NULL) {
		error_set(err, "alert: out of memory");
		return NULL;
	}
	a->program = program;
	if (!config_alerts_set(cfg))
		return a;
	a->transport = transport_pick(&options, err);
	if (a->transport == NULL) {
		free(a);
		return NULL;
	}
	return a;
}

void alert_free(struct alert *a)
{
	if (a == NULL)
		return;
	transport_free(a->transport);
	free(a);
}

bool alert_enabled(const struct alert *a)
{
	return a != NULL && a->transport != NULL;
}

/* Adds key: text (when text is not NULL). Returns 0, or -1 out of memory. */
static int add(json_object *obj, const char *key, const char *text)
{
	json_object *value;

	if (text == NULL)
		return 0;
	value = json_object_new_string(text);
	if (value == NULL)
		return -1;
	json_object_object_add(obj, key, value);
	return 0;
}

/* The alert's JSON as a new string the caller frees, or NULL (out of
 * memory). */
static char *body_new(const struct alert *a, const struct alert_message *m,
		      const char *at)
{
	json_object *obj = json_object_new_object(), *payment = NULL;
	char host[256], *text = NULL;

	if (obj == NULL)
		return NULL;
	if (gethostname(host, sizeof(host)) != 0)
		snprintf(host, sizeof(host), "unknown-host");
	host[sizeof(host) - 1] = '\0';
	if (add(obj, "event", m->event) != 0 || add(obj, "at", at) != 0 ||
	    add(obj, "program", a->program) != 0 || add(obj, "host", host) != 0 ||
	    add(obj, "summary", m->summary) != 0 ||
	    add(obj, "action", m->action) != 0 ||
	    add(obj, "detail", m->detail) != 0)
		goto out;
	/* An alert about a profile, not a payment (payhook-reconcile's):
	 * the profile on its own. */
	if (m->id == 0 && m->provider != NULL &&
	    add(obj, "provider", m->provider) != 0)
		goto out;
	if (m->id != 0) {
		json_object *id;

		payment = json_object_new_object();
		if (payment == NULL)
			goto out;
		id = json_object_new_uint64(m->id);
		if (id == NULL)
			goto out;
		json_object_object_add(payment, "id", id);
		if (add(payment, "provider", m->provider) != 0 ||
		    add(payment, "transaction_id", m->transaction_id) != 0)
			goto out;
		json_object_object_add(obj, "payment", payment);
		payment = NULL;
	}
	text = strdup(json_object_to_json_string_ext(obj, JSON_C_TO_STRING_PLAIN));
out:
	json_object_put(payment);
	json_object_put(obj);
	return text;
}

int alert_send(struct alert *a, const struct alert_message *m,
	       struct error *err)
{
	struct transport_outcome out;
	struct timespec now;
	char at[UTC_RFC3339_MAX], key[96];
	char *body;
	int rc;

	if (!alert_enabled(a))
		return 0;
	clock_gettime(CLOCK_REALTIME, &now);
	if (utc_format(now.tv_sec, UTC_RFC3339, at, sizeof(at)) != 0)
		snprintf(at, sizeof(at), "?");
	/* The same on every try of an episode, unique otherwise: the
	 * receiver may drop a repeat by it. */
	if (m->episode != 0)
		snprintf(key, sizeof(key), "alert:%s:%llu", m->event,
			 m->episode);
	else
		snprintf(key, sizeof(key), "alert:%s:%lld%03ld:%ld:%llu",
			 m->event, (long long)now.tv_sec,
			 now.tv_nsec / 1000000L, (long)getpid(), ++a->sent);
	body = body_new(a, m, at);
	if (body == NULL)
		return error_set(err, "alert: out of memory");
	transport_outcome_init(&out);
	rc = transport_send(a->transport, key, body, strlen(body), &out, err);
	free(body);
	if (rc != 0)
		return -1;
	if (!out.delivered)
		return error_set(err, "alert %s not delivered: %s", m->event,
				 out.detail);
	return 0;
}
