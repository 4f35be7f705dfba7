/* handoff.c - the JSON handed on and one attempt to deliver it, by HTTP POST
 * (libcurl's easy interface) or by a command (see handoff.h). */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <poll.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <curl/curl.h>
#include <json-c/json.h>

#include "handoff.h"
#include "log.h"
#include "signature.h"
#include "timing.h"

extern char **environ;

#define ENV_PREFIX "PAYHOOK_"
#define KEY_VARIABLE "PAYHOOK_IDEMPOTENCY_KEY="
/* How often a command's exit is looked for when its output stays open (a
 * background child of it may hold the pipe). */
#define CHILD_TICK_MS 50
/* ... and once its output is closed, when only its exit is left to see. */
#define CHILD_EXIT_TICK_MS 2
/* Highest descriptor closed in a command's process without close_range. */
#define FD_CLOSE_MAX 65536L

struct handoff {
	const struct config *cfg;
	CURL *curl;                       /* NULL for a command */
	struct signature_keyring *ring;   /* NULL without dispatch_secret */
	char curl_error[CURL_ERROR_SIZE];
	char response[HANDOFF_OUTPUT_KEEP + 1]; /* first bytes of the body */
	size_t response_len;
	long fd_max;                      /* descriptors a command must not get */
};

int handoff_global_init(struct error *err)
{
	CURLcode rc = curl_global_init(CURL_GLOBAL_DEFAULT);

	if (rc != CURLE_OK)
		return error_set(err, "libcurl initialisation: %s",
				 curl_easy_strerror(rc));
	return 0;
}

void handoff_global_cleanup(void)
{
	curl_global_cleanup();
}

static bool has_http_scheme(const char *url)
{
	return strncasecmp(url, "http://", 7) == 0 ||
	       strncasecmp(url, "https://", 8) == 0;
}

int handoff_check_config(const struct config *cfg, struct error *err)
{
	bool url = cfg->dispatch_url != NULL && cfg->dispatch_url[0] != '\0';
	bool command = cfg->dispatch_command != NULL &&
		       cfg->dispatch_command[0] != '\0';

	if (url && command)
		return error_set(err, "both dispatch_url and dispatch_command "
				 "are set: set exactly one of them (the URL to "
				 "POST each payment to, or the command to run "
				 "per payment)");
	if (!url && !command)
		return error_set(err, "neither dispatch_url nor "
				 "dispatch_command is set: set exactly one of "
				 "them (the URL to POST each payment to, or the "
				 "command to run per payment)");
	/* The URL is never quoted: it may carry a token. */
	if (url && !has_http_scheme(cfg->dispatch_url))
		return error_set(err, "dispatch_url must start with http:// or "
				 "https://");
	if (command && cfg->dispatch_secret.count > 0)
		return error_set(err, "dispatch_secret signs HTTP POSTs: it has "
				 "no use with dispatch_command (remove it, or "
				 "set dispatch_url instead)");
	return 0;
}

/* Keeps the first bytes of a response body for the detail. */
static size_t keep_response(char *data, size_t size, size_t nmemb, void *ctx)
{
	struct handoff *h = ctx;
	size_t len = size * nmemb;
	size_t room = HANDOFF_OUTPUT_KEEP - h->response_len;
	size_t n = len < room ? len : room;

	memcpy(h->response + h->response_len, data, n);
	h->response_len += n;
	h->response[h->response_len] = '\0';
	return len;
}

/* The options that are the same on every attempt. Returns 0, or -1 with err
 * naming the option libcurl refused. */
static int setup_curl(struct handoff *h, struct error *err)
{
	const struct config *cfg = h->cfg;
	CURL *c = h->curl;
	CURLcode rc;
	const char *what;

#define SET(option, value)                              \
	do {                                            \
		what = #option;                         \
		rc = curl_easy_setopt(c, option, value); \
		if (rc != CURLE_OK)                     \
			goto refused;                   \
	} while (0)

	SET(CURLOPT_URL, cfg->dispatch_url);
	SET(CURLOPT_POST, 1L);
	/* The whole attempt, connecting included; no signals (SIGALRM) used. */
	SET(CURLOPT_TIMEOUT_MS, cfg->dispatch_timeout_ms);
	SET(CURLOPT_CONNECTTIMEOUT_MS, cfg->dispatch_timeout_ms);
	SET(CURLOPT_NOSIGNAL, 1L);
	/* A redirect is an answer that is not 2xx: retried, never followed
	 * (the payment would go where the configuration does not say). */
	SET(CURLOPT_FOLLOWLOCATION, 0L);
	SET(CURLOPT_SSL_VERIFYPEER, 1L);
	SET(CURLOPT_SSL_VERIFYHOST, 2L);
#if LIBCURL_VERSION_NUM >= 0x075500
	SET(CURLOPT_PROTOCOLS_STR, "http,https");
#else
	SET(CURLOPT_PROTOCOLS, (long)(CURLPROTO_HTTP | CURLPROTO_HTTPS));
#endif
	SET(CURLOPT_USERAGENT, "payhook-dispatch/" PACKAGE_VERSION);
	SET(CURLOPT_WRITEFUNCTION, keep_response);
	SET(CURLOPT_WRITEDATA, h);
	SET(CURLOPT_ERRORBUFFER, h->curl_error);
	SET(CURLOPT_TCP_KEEPALIVE, 1L);
#undef SET
	return 0;
refused:
	return error_set(err, "libcurl refused %s: %s", what,
			 curl_easy_strerror(rc));
}

struct handoff *handoff_new(const struct config *cfg, struct error *err)
{
	struct handoff *h = calloc(1, sizeof(*h));
	long open_max;

	if (h == NULL) {
		error_set(err, "handoff: out of memory");
		return NULL;
	}
	h->cfg = cfg;
	open_max = sysconf(_SC_OPEN_MAX);
	h->fd_max = open_max > 0 && open_max < FD_CLOSE_MAX ? open_max
							    : FD_CLOSE_MAX;
	if (cfg->dispatch_url == NULL || cfg->dispatch_url[0] == '\0')
		return h;
	h->curl = curl_easy_init();
	if (h->curl == NULL) {
		error_set(err, "libcurl: no easy handle (out of memory)");
		goto fail;
	}
	if (setup_curl(h, err) != 0)
		goto fail;
	/* Without an asynchronous resolver a DNS look-up ignores the
	 * timeout, and an attempt could outlast the lease. */
	if ((curl_version_info(CURLVERSION_NOW)->features &
	     CURL_VERSION_ASYNCHDNS) == 0)
		log_warn("this libcurl resolves names synchronously: a slow DNS "
			 "server can stretch an attempt beyond "
			 "dispatch_timeout_ms; use an IP address in "
			 "dispatch_url");
	if (cfg->dispatch_secret.count > 0) {
		struct error ring_err;

		/* The first secret signs; the others are for the receiver's
		 * rotation. */
		h->ring = signature_keyring_new(cfg->dispatch_secret.items, 1,
						SECRET_WHSEC_BASE64, &ring_err);
		if (h->ring == NULL) {
			error_set(err, "dispatch_secret: %s", ring_err.message);
			goto fail;
		}
	}
	return h;
fail:
	handoff_free(h);
	return NULL;
}

void handoff_free(struct handoff *h)
{
	if (h == NULL)
		return;
	if (h->curl != NULL)
		curl_easy_cleanup(h->curl);
	signature_keyring_free(h->ring);
	free(h);
}

int handoff_idempotency_key(const struct handoff_row *p, char *out,
			    size_t cap, struct error *err)
{
	int len = snprintf(out, cap, "payhook:%s:%.*s", p->provider,
			   (int)p->transaction_id_len, p->transaction_id);
	size_t expected = strlen("payhook::") + strlen(p->provider) +
			  p->transaction_id_len;

	/* A NUL inside the id would cut it short: compare with the whole. */
	if (len < 0 || (size_t)len >= cap || (size_t)len != expected ||
	    !signature_id_valid(out)) {
		if (cap > 0)
			out[0] = '\0';
		return error_set(err, "the idempotency key of this payment is "
				 "not 1-255 bytes of visible ASCII (it goes "
				 "into a header): the transaction id cannot be "
				 "handed on");
	}
	return 0;
}

/* True when text[0..len) is well-formed UTF-8: no overlong forms, no
 * surrogates, nothing above U+10FFFF. */
static bool utf8_valid(const unsigned char *text, size_t len)
{
	size_t i = 0;

	while (i < len) {
		unsigned char c = text[i];
		size_t n;
		uint32_t cp;

		if (c < 0x80) {
			i++;
			continue;
		}
		if (c >= 0xC2 && c <= 0xDF) {
			n = 1;
			cp = c & 0x1F;
		} else if (c >= 0xE0 && c <= 0xEF) {
			n = 2;
			cp = c & 0x0F;
		} else if (c >= 0xF0 && c <= 0xF4) {
			n = 3;
			cp = c & 0x07;
		} else {
			return false;
		}
		if (len - i <= n)
			return false;
		for (size_t k = 1; k <= n; k++) {
			if ((text[i + k] & 0xC0) != 0x80)
				return false;
			cp = (cp << 6) | (text[i + k] & 0x3F);
		}
		if ((n == 2 && cp < 0x800) || (n == 3 && cp < 0x10000) ||
		    cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF))
			return false;
		i += n + 1;
	}
	return true;
}

/* Adds key = a new string of text[0..len) to obj. Returns 0, or -1. */
static int add_string(json_object *obj, const char *key, const char *text,
		      size_t len)
{
	json_object *value;

	if (len > INT32_MAX)
		return -1;
	value = json_object_new_string_len(text, (int)len);
	if (value == NULL)
		return -1;
	if (json_object_object_add(obj, key, value) != 0) {
		json_object_put(value);
		return -1;
	}
	return 0;
}

/* handoff_body_new; *not_utf8 tells a field that can never be sent from
 * running out of memory, which may pass. */
static char *body_new(const struct handoff_row *p, size_t *len,
		      bool *not_utf8, struct error *err)
{
	json_object *obj, *amount;
	const char *text;
	char *body = NULL;
	size_t text_len = 0;

	/* json-c copies bytes of 0x80 and above as they are: a field that is
	 * not UTF-8 would make the whole body invalid JSON. payhook checked
	 * the body it received, so only a row written by other means gets
	 * here. */
	if (!utf8_valid((const unsigned char *)p->transaction_id,
			p->transaction_id_len) ||
	    (p->event_id != NULL &&
	     !utf8_valid((const unsigned char *)p->event_id, p->event_id_len)) ||
	    !utf8_valid((const unsigned char *)p->payload, p->payload_len)) {
		*not_utf8 = true;
		error_set(err, "the transaction id, event id or payload is not "
			  "valid UTF-8: no JSON string can carry it");
		return NULL;
	}
	obj = json_object_new_object();
	if (obj == NULL)
		goto oom;
	if (add_string(obj, "provider", p->provider, strlen(p->provider)) != 0 ||
	    add_string(obj, "transaction_id", p->transaction_id,
		       p->transaction_id_len) != 0)
		goto oom;
	amount = json_object_new_uint64(p->amount);
	if (amount == NULL)
		goto oom;
	if (json_object_object_add(obj, "amount", amount) != 0) {
		json_object_put(amount);
		goto oom;
	}
	if (add_string(obj, "currency", p->currency, strlen(p->currency)) != 0)
		goto oom;
	/* A NULL value is JSON's null. */
	if (p->event_id != NULL ? add_string(obj, "event_id", p->event_id,
					     p->event_id_len) != 0
				: json_object_object_add(obj, "event_id", NULL) != 0)
		goto oom;
	if (add_string(obj, "received_at", p->received_at,
		       strlen(p->received_at)) != 0 ||
	    add_string(obj, "payload", p->payload, p->payload_len) != 0)
		goto oom;
	text = json_object_to_json_string_length(
		obj, JSON_C_TO_STRING_PLAIN | JSON_C_TO_STRING_NOSLASHESCAPE,
		&text_len);
	if (text == NULL)
		goto oom;
	body = malloc(text_len + 1);
	if (body == NULL)
		goto oom;
	memcpy(body, text, text_len + 1);
	*len = text_len;
	json_object_put(obj);
	return body;
oom:
	json_object_put(obj);
	error_set(err, "handoff: out of memory building the JSON body");
	return NULL;
}

char *handoff_body_new(const struct handoff_row *p, size_t *len,
		       struct error *err)
{
	bool not_utf8 = false;

	return body_new(p, len, &not_utf8, err);
}

/* Sets out's detail to prefix and text[0..len), cut to fit, as printable
 * ASCII (other bytes of text become spaces). */
static void detail_set(struct handoff_outcome *out, const char *prefix,
		       const char *text, size_t len)
{
	size_t used = 0, prefix_len = strlen(prefix);

	for (size_t i = 0; i < prefix_len && used + 1 < sizeof(out->detail); i++)
		out->detail[used++] = prefix[i];
	for (size_t i = 0; i < len && used + 1 < sizeof(out->detail); i++) {
		unsigned char c = (unsigned char)text[i];

		out->detail[used++] = c >= 0x20 && c < 0x7f ? (char)c : ' ';
	}
	/* Trailing white space (a final newline) says nothing. */
	while (used > 0 && out->detail[used - 1] == ' ')
		used--;
	out->detail[used] = '\0';
}

/* Appends "name: value" to *list ("name:" for an empty value, which tells
 * libcurl to leave out a header it would add). Returns 0, or -1 when out of
 * memory. */
static int add_header(struct curl_slist **list, const char *name,
		      const char *value)
{
	char line[SIGNATURE_TEXT_MAX + HANDOFF_KEY_MAX + 64];
	struct curl_slist *grown;

	snprintf(line, sizeof(line), "%s:%s%s", name, value[0] != '\0' ? " " : "",
		 value);
	grown = curl_slist_append(*list, line);
	if (grown == NULL)
		return -1;
	*list = grown;
	return 0;
}

static int deliver_http(struct handoff *h, const char *key, const char *body,
			size_t body_len, struct handoff_outcome *out,
			struct error *err)
{
	struct curl_slist *headers = NULL;
	char timestamp[24], signature[SIGNATURE_TEXT_MAX];
	CURLcode rc;
	long status = 0;
	int result = -1;

	/* "Expect:" turns off curl's 100-continue for large bodies: one
	 * round trip fewer, and receivers that ignore it do not stall. */
	if (add_header(&headers, "Content-Type", "application/json") != 0 ||
	    add_header(&headers, "Idempotency-Key", key) != 0 ||
	    add_header(&headers, "Expect", "") != 0)
		goto oom;
	if (h->ring != NULL) {
		/* A fresh timestamp on every attempt, so a retry days later
		 * still passes the receiver's tolerance; the id stays. */
		snprintf(timestamp, sizeof(timestamp), "%lld",
			 (long long)time(NULL));
		if (signature_sign_standard(h->ring, key, timestamp, body,
					    body_len, signature, err) != 0) {
			detail_set(out, err->message, "", 0);
			goto out;
		}
		if (add_header(&headers, "webhook-id", key) != 0 ||
		    add_header(&headers, "webhook-timestamp", timestamp) != 0 ||
		    add_header(&headers, "webhook-signature", signature) != 0)
			goto oom;
	}
	h->response_len = 0;
	h->response[0] = '\0';
	h->curl_error[0] = '\0';
	if (curl_easy_setopt(h->curl, CURLOPT_HTTPHEADER, headers) != CURLE_OK ||
	    curl_easy_setopt(h->curl, CURLOPT_POSTFIELDS, body) != CURLE_OK ||
	    curl_easy_setopt(h->curl, CURLOPT_POSTFIELDSIZE_LARGE,
			     (curl_off_t)body_len) != CURLE_OK) {
		error_set(err, "libcurl refused the request's options");
		detail_set(out, err->message, "", 0);
		goto out;
	}
	rc = curl_easy_perform(h->curl);
	result = 0;
	if (rc != CURLE_OK) {
		char prefix[64];

		out->timed_out = rc == CURLE_OPERATION_TIMEDOUT;
		snprintf(prefix, sizeof(prefix), "curl %d: ", (int)rc);
		/* The error buffer names host and port, never the path or the
		 * query of the URL. */
		if (h->curl_error[0] != '\0')
			detail_set(out, prefix, h->curl_error,
				   strlen(h->curl_error));
		else
			detail_set(out, prefix, curl_easy_strerror(rc),
				   strlen(curl_easy_strerror(rc)));
		goto out;
	}
	curl_easy_getinfo(h->curl, CURLINFO_RESPONSE_CODE, &status);
	out->http_status = status;
	out->delivered = status >= 200 && status <= 299;
	if (status == 429 || status == 503) {
		curl_off_t seconds = 0;

		/* libcurl reads both forms (delta-seconds and an HTTP date);
		 * 0 when the header is absent or says nothing usable. */
		if (curl_easy_getinfo(h->curl, CURLINFO_RETRY_AFTER,
				      &seconds) == CURLE_OK && seconds > 0)
			out->retry_after_ms = seconds > 86400 * 7
						      ? 86400L * 7 * 1000
						      : (long)seconds * 1000;
	}
	{
		char prefix[48];

		snprintf(prefix, sizeof(prefix), "HTTP %ld%s", status,
			 h->response_len > 0 ? ": " : "");
		detail_set(out, prefix, h->response, h->response_len);
	}
	goto out;
oom:
	error_set(err, "handoff: out of memory building the request headers");
	detail_set(out, err->message, "", 0);
out:
	/* The list is freed below: the handle must not keep pointing at it. */
	curl_easy_setopt(h->curl, CURLOPT_HTTPHEADER, NULL);
	curl_easy_setopt(h->curl, CURLOPT_POSTFIELDS, NULL);
	curl_slist_free_all(headers);
	return result;
}

/* A new environment for a command: this one without any PAYHOOK_* variable
 * (they may hold secrets), plus PAYHOOK_IDEMPOTENCY_KEY=key. The array is
 * freed with free(); its last-but-one string (*key_var) too. Returns NULL
 * when out of memory. */
static char **command_env_new(const char *key, char **key_var)
{
	size_t count = 0, used = 0;
	char **env;

	for (char **e = environ; e != NULL && *e != NULL; e++)
		count++;
	size_t var_len = strlen(KEY_VARIABLE) + strlen(key) + 1;

	env = calloc(count + 2, sizeof(*env));
	*key_var = malloc(var_len);
	if (env == NULL || *key_var == NULL) {
		free(env);
		free(*key_var);
		*key_var = NULL;
		return NULL;
	}
	for (char **e = environ; e != NULL && *e != NULL; e++) {
		if (strncmp(*e, ENV_PREFIX, strlen(ENV_PREFIX)) != 0)
			env[used++] = *e;
	}
	snprintf(*key_var, var_len, "%s%s", KEY_VARIABLE, key);
	env[used++] = *key_var;
	env[used] = NULL;
	return env;
}

/* In the forked child: its own process group (so a timeout kills whatever it
 * started), the pipes on 0/1/2, nothing else open, default signals, then
 * /bin/sh -c command. Only async-signal-safe calls. Never returns. */
_Noreturn static void run_child(const struct handoff *h, int in_fd, int out_fd,
				char **env)
{
	static const char failed[] = "payhook-dispatch: cannot run /bin/sh\n";
	char *argv[] = { "sh", "-c", h->cfg->dispatch_command, NULL };
	struct sigaction dfl;
	sigset_t none;

	setpgid(0, 0);
	memset(&dfl, 0, sizeof(dfl));
	dfl.sa_handler = SIG_DFL;
	sigemptyset(&dfl.sa_mask);
	/* Ignored signals (SIGPIPE) and a blocked mask survive exec. */
	for (int sig = 1; sig < NSIG; sig++)
		sigaction(sig, &dfl, NULL);
	sigemptyset(&none);
	sigprocmask(SIG_SETMASK, &none, NULL);
	if (dup2(in_fd, STDIN_FILENO) < 0 || dup2(out_fd, STDOUT_FILENO) < 0 ||
	    dup2(out_fd, STDERR_FILENO) < 0)
		_exit(126);
	/* The MySQL connection, kept-alive sockets and log file stay ours. */
#ifdef HAVE_CLOSE_RANGE
	if (close_range(3, ~0U, 0) != 0)
#endif
	{
		for (long fd = 3; fd < h->fd_max; fd++)
			close((int)fd);
	}
	execve("/bin/sh", argv, env);
	if (write(STDERR_FILENO, failed, sizeof(failed) - 1) < 0) {
		/* nothing left to tell */
	}
	_exit(127);
}

static int64_t ms_left(int64_t deadline_us)
{
	int64_t left = (deadline_us - timing_now_us() + 999) / 1000;

	return left > 0 ? left : 0;
}

/* Reads what is there from fd into the kept output. Returns 0 while the
 * pipe is open, 1 at its end (or on an error). */
static int read_output(int fd, char *kept, size_t *kept_len)
{
	char buf[4096];

	for (;;) {
		ssize_t n = read(fd, buf, sizeof(buf));

		if (n > 0) {
			size_t room = HANDOFF_OUTPUT_KEEP - *kept_len;
			size_t take = (size_t)n < room ? (size_t)n : room;

			memcpy(kept + *kept_len, buf, take);
			*kept_len += take;
			continue;
		}
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0 && errno == EAGAIN)
			return 0;
		return 1;
	}
}

/* Ends a command that outlasted its time: SIGTERM to its process group,
 * HANDOFF_KILL_GRACE_MS to go, then SIGKILL. Reaps it into *status. */
static void kill_command(pid_t pid, int *status)
{
	int64_t deadline = timing_now_us() + HANDOFF_KILL_GRACE_MS * 1000;
	const struct timespec tick = { 0, 10 * 1000 * 1000 };

	kill(-pid, SIGTERM);
	kill(-pid, SIGCONT);
	while (timing_now_us() < deadline) {
		pid_t got = waitpid(pid, status, WNOHANG);

		if (got == pid) {
			/* What it started may linger: the group goes too. */
			kill(-pid, SIGKILL);
			return;
		}
		if (got < 0 && errno != EINTR)
			return;
		nanosleep(&tick, NULL);
	}
	kill(-pid, SIGKILL);
	while (waitpid(pid, status, 0) < 0 && errno == EINTR) {
	}
}

static int deliver_command(struct handoff *h, const char *key,
			   const char *body, size_t body_len,
			   struct handoff_outcome *out, struct error *err)
{
	int64_t deadline = timing_now_us() +
			   (int64_t)h->cfg->dispatch_timeout_ms * 1000;
	int in[2] = { -1, -1 }, outp[2] = { -1, -1 };
	char kept[HANDOFF_OUTPUT_KEEP + 1];
	size_t kept_len = 0, written = 0;
	char *key_var = NULL;
	char **env;
	pid_t pid;
	int status = 0, result = -1;
	bool exited = false;

	env = command_env_new(key, &key_var);
	if (env == NULL) {
		error_set(err, "handoff: out of memory building the command's "
			  "environment");
		goto fail;
	}
	if (pipe2(in, O_CLOEXEC) != 0 || pipe2(outp, O_CLOEXEC) != 0) {
		error_set(err, "handoff: pipe: %s", strerror(errno));
		goto fail;
	}
	pid = fork();
	if (pid < 0) {
		error_set(err, "handoff: fork: %s", strerror(errno));
		goto fail;
	}
	if (pid == 0)
		run_child(h, in[0], outp[1], env);
	/* Both sides set the group, so kill(-pid) works whoever runs first
	 * (after its exec the child's own call has happened). */
	setpgid(pid, pid);
	close(in[0]);
	close(outp[1]);
	in[0] = outp[1] = -1;
	fcntl(in[1], F_SETFL, fcntl(in[1], F_GETFL) | O_NONBLOCK);
	fcntl(outp[0], F_SETFL, fcntl(outp[0], F_GETFL) | O_NONBLOCK);
	if (body_len == 0) {
		close(in[1]);
		in[1] = -1;
	}

	while (!exited) {
		struct pollfd fds[2];
		nfds_t n = 0;
		int64_t left = ms_left(deadline), tick;
		pid_t got;

		got = waitpid(pid, &status, WNOHANG);
		if (got == pid) {
			exited = true;
			break;
		}
		if (left == 0)
			break;
		if (in[1] >= 0)
			fds[n++] = (struct pollfd){ .fd = in[1], .events = POLLOUT };
		if (outp[0] >= 0)
			fds[n++] = (struct pollfd){ .fd = outp[0], .events = POLLIN };
		/* Once its output is closed, only its exit is left to see:
		 * look often. */
		tick = outp[0] >= 0 ? CHILD_TICK_MS : CHILD_EXIT_TICK_MS;
		if (poll(fds, n, (int)(left < tick ? left : tick)) < 0 &&
		    errno != EINTR)
			break;
		if (in[1] >= 0) {
			ssize_t w = write(in[1], body + written, body_len - written);

			if (w > 0)
				written += (size_t)w;
			/* EPIPE: it does not read its input; its exit
			 * status still decides. */
			if ((w < 0 && errno != EAGAIN && errno != EINTR) ||
			    written == body_len) {
				close(in[1]);
				in[1] = -1;
			}
		}
		if (outp[0] >= 0 && read_output(outp[0], kept, &kept_len) != 0) {
			close(outp[0]);
			outp[0] = -1;
		}
	}
	if (!exited) {
		kill_command(pid, &status);
		out->timed_out = true;
	}
	if (outp[0] >= 0)
		read_output(outp[0], kept, &kept_len);
	kept[kept_len] = '\0';
	result = 0;

	{
		char prefix[96];

		if (out->timed_out) {
			snprintf(prefix, sizeof(prefix),
				 "timed out after %ld ms: killed%s",
				 h->cfg->dispatch_timeout_ms,
				 kept_len > 0 ? ": " : "");
			out->exit_status = -1;
			if (WIFSIGNALED(status))
				out->term_signal = WTERMSIG(status);
		} else if (WIFEXITED(status)) {
			out->exit_status = WEXITSTATUS(status);
			out->delivered = out->exit_status == 0;
			snprintf(prefix, sizeof(prefix), "exit status %d%s%s",
				 out->exit_status,
				 out->exit_status == 127 ? " (command not found?)"
							 : "",
				 kept_len > 0 ? ": " : "");
		} else {
			out->exit_status = -1;
			out->term_signal = WIFSIGNALED(status) ? WTERMSIG(status)
							       : 0;
			snprintf(prefix, sizeof(prefix), "killed by signal %d%s",
				 out->term_signal, kept_len > 0 ? ": " : "");
		}
		detail_set(out, prefix, kept, kept_len);
	}
	goto out;
fail:
	detail_set(out, err->message, "", 0);
out:
	for (int i = 0; i < 2; i++) {
		if (in[i] >= 0)
			close(in[i]);
		if (outp[i] >= 0)
			close(outp[i]);
	}
	free(env);
	free(key_var);
	return result;
}

int handoff_deliver(struct handoff *h, const struct handoff_row *p,
		    struct handoff_outcome *out, struct error *err)
{
	char key[HANDOFF_KEY_MAX];
	char *body;
	size_t body_len = 0;
	bool not_utf8 = false;
	int rc;

	memset(out, 0, sizeof(*out));
	out->exit_status = -1;
	out->retry_after_ms = -1;
	if (handoff_idempotency_key(p, key, sizeof(key), err) != 0) {
		out->permanent = true;
		detail_set(out, err->message, "", 0);
		return -1;
	}
	body = body_new(p, &body_len, &not_utf8, err);
	if (body == NULL) {
		/* Out of memory may pass; bytes that are not UTF-8 stay. */
		out->permanent = not_utf8;
		detail_set(out, err->message, "", 0);
		return -1;
	}
	if (h->curl != NULL)
		rc = deliver_http(h, key, body, body_len, out, err);
	else
		rc = deliver_command(h, key, body, body_len, out, err);
	free(body);
	return rc;
}
