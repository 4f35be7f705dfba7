/* sample.c - sample events in each provider's shape, and ids in the form
 * each provider gives them (see sample.h). Signing them is the profile's
 * job (provider_sign), from the one table the receiving side reads.
 */
#include "config.h"

#include <ctype.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <json-c/json.h>

#include "currency.h"
#include "provider.h"
#include "sample.h"
#include "utc.h"

/* ---- samples ---- */

/* Each provider's payment event, abridged from its documentation (the
 * fixtures under tests/fixtures/providers/ hold the full examples). The
 * fields payhook reads are overwritten from the input. */
/* How a provider writes an id: prefix, alphabet, length. */
struct id_shape {
	const char *prefix;
	const char *alphabet;
	size_t len;
	bool uuid; /* 8-4-4-4-12 hex (Square's event ids) */
};

#define BASE62 "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"
#define LOWER36 "0123456789abcdefghijklmnopqrstuvwxyz"
#define UPPER36 "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZ"
#define ULID32 "0123456789abcdefghjkmnpqrstvwxyz"
#define HEX "0123456789abcdef"
#define DIGITS "0123456789"

/* Each provider's samples: its payment event (abridged from its
 * documentation; the fixtures under tests/fixtures/providers/ hold the full
 * examples; the fields payhook reads are overwritten from the input), how
 * its own events write what the profile does not say, the currency a
 * sample is in unless told, and the shape of its ids. A profile without a
 * template (generic) has no samples. */
struct sample_profile {
	const char *template;
	const char *currency;         /* --sample's default */
	bool lower_currency;          /* written lower case (Stripe, PAY.JP) */
	const char *also_id_path;     /* a second copy of the id (Square) */
	const char *also_amount_path; /* a second amount (Stripe's amount) */
	bool first_item;              /* the event is the body's first
				       * notification item (Adyen) */
	struct id_shape ids[2];       /* [0] its transactions', [1] events' */
	const char *event_id;         /* its samples' event id unless told
				       * (NULL: "evt_sample") */
};

static const struct sample_profile samples[CONFIG_PROVIDER_COUNT] = {
	[CONFIG_PROVIDER_STANDARD] = {
		.template =
		"{\"transaction_id\":\"\",\"amount\":1,\"currency\":\"\"}",
		.currency = "USD",
		.ids = { { "tx_", LOWER36, 24, false },
			 { "msg_", HEX, 24, false } },
	},
	[CONFIG_PROVIDER_STRIPE] = {
		.template =
		"{\"id\":\"evt_3MtwBwLkdIwHu7ix2Jy0ZHIh\",\"object\":\"event\","
		"\"api_version\":\"2024-06-20\",\"created\":1680800523,"
		"\"data\":{\"object\":{\"id\":\"\",\"object\":\"payment_intent\","
		"\"amount\":1,\"amount_received\":1,\"capture_method\":"
		"\"automatic\",\"currency\":\"\",\"livemode\":false,"
		"\"metadata\":{},\"status\":\"succeeded\"}},\"livemode\":false,"
		"\"pending_webhooks\":1,\"request\":{\"id\":null,"
		"\"idempotency_key\":null},\"type\":\"\"}",
		.currency = "USD",
		.lower_currency = true,
		.also_amount_path = "data.object.amount",
		.ids = { { "pi_", BASE62, 24, false },
			 { "evt_", BASE62, 24, false } },
	},
	[CONFIG_PROVIDER_PADDLE] = {
		.template =
		"{\"event_id\":\"evt_01h8e1jxjnw9ra6zarhnz1a7y1\",\"event_type\":"
		"\"\",\"occurred_at\":\"2023-08-22T07:15:45.366122Z\","
		"\"notification_id\":\"ntf_01h8e1jxna32kc43ev1vkqsq8x\","
		"\"data\":{\"id\":\"\",\"status\":\"completed\",\"currency_code\":"
		"\"\",\"origin\":\"web\",\"details\":{\"totals\":{\"subtotal\":"
		"\"0\",\"tax\":\"0\",\"discount\":\"0\",\"total\":\"0\","
		"\"grand_total\":\"\"}}}}",
		.currency = "USD",
		.ids = { { "txn_01", ULID32, 24, false },
			 { "evt_01", ULID32, 24, false } },
	},
	[CONFIG_PROVIDER_RAZORPAY] = {
		.template =
		"{\"entity\":\"event\",\"account_id\":\"acc_BFQ7uQEaa7j2z7\","
		"\"event\":\"\",\"contains\":[\"payment\"],\"payload\":"
		"{\"payment\":{\"entity\":{\"id\":\"\",\"entity\":\"payment\","
		"\"amount\":1,\"currency\":\"\",\"status\":\"captured\","
		"\"method\":\"card\",\"captured\":true}}},"
		"\"created_at\":1567674606}",
		.currency = "INR",
		.ids = { { "pay_", BASE62, 14, false },
			 { "", BASE62, 14, false } },
	},
	[CONFIG_PROVIDER_KOMOJU] = {
		.template =
		"{\"id\":\"b2lhvm8e6pny4sz4xz9l1qh7c\",\"type\":\"\",\"resource\":"
		"\"event\",\"data\":{\"id\":\"\",\"resource\":\"payment\","
		"\"status\":\"captured\",\"amount\":1,\"currency\":\"\"},"
		"\"created_at\":\"2024-06-17T04:03:26Z\",\"reason\":null}",
		.currency = "JPY",
		.ids = { { "", LOWER36, 25, false },
			 { "", LOWER36, 25, false } },
	},
	[CONFIG_PROVIDER_PAYJP] = {
		.template =
		"{\"id\":\"evnt_54db4d63c7886256acdbc784ccf\",\"object\":\"event\","
		"\"livemode\":false,\"created\":1433127984,\"pending_webhooks\":1,"
		"\"type\":\"\",\"data\":{\"id\":\"\",\"object\":\"charge\","
		"\"amount\":1,\"currency\":\"\",\"paid\":true,\"captured\":true}}",
		.currency = "JPY",
		.lower_currency = true,
		.ids = { { "ch_", HEX, 29, false },
			 { "evnt_", HEX, 27, false } },
	},
	[CONFIG_PROVIDER_SQUARE] = {
		.template =
		"{\"merchant_id\":\"6SSW7HV8K2ST5\",\"type\":\"\",\"event_id\":"
		"\"6a8f5f28-54a1-4eb0-a98a-3111513fd4fc\",\"created_at\":"
		"\"2020-11-22T21:16:51.310Z\",\"data\":{\"type\":\"payment\","
		"\"id\":\"\",\"object\":{\"payment\":{\"id\":\"\","
		"\"amount_money\":{\"amount\":1,\"currency\":\"\"},\"status\":"
		"\"COMPLETED\",\"source_type\":\"CARD\"}}}}",
		.currency = "USD",
		.also_id_path = "data.object.payment.id",
		.ids = { { "", BASE62, 29, false },
			 { "", HEX, 32, true } },
	},
	[CONFIG_PROVIDER_SHOPIFY] = {
		.template =
		"{\"id\":1,\"name\":\"#1001\",\"currency\":\"\",\"total_price\":"
		"\"\",\"financial_status\":\"paid\",\"created_at\":"
		"\"2021-12-31T19:00:00-05:00\"}",
		.currency = "USD",
		.ids = { { "", DIGITS, 13, false },
			 { "", LOWER36, 24, false } },
	},
	[CONFIG_PROVIDER_ADYEN] = {
		.template =
		"{\"live\":\"false\",\"notificationItems\":[{"
		"\"NotificationRequestItem\":{\"additionalData\":{"
		"\"hmacSignature\":\"\"},\"amount\":{\"currency\":\"\",\"value\":1},"
		"\"eventCode\":\"\",\"eventDate\":\"2024-06-17T13:42:40+02:00\","
		"\"merchantAccountCode\":\"TestMerchant\",\"merchantReference\":"
		"\"order-1\",\"pspReference\":\"\",\"success\":\"true\"}}]}",
		.currency = "USD",
		.first_item = true,
		.ids = { { "", UPPER36, 16, false },
			 { "", UPPER36, 16, false } },
	},
	/* PAYMENT.CAPTURE.COMPLETED, as PayPal's sample
	 * WH-58D329510W468432D-8HN650336L201105X (abridged). */
	[CONFIG_PROVIDER_PAYPAL] = {
		.template =
		"{\"id\":\"WH-58D329510W468432D-8HN650336L201105X\","
		"\"event_version\":\"1.0\",\"create_time\":"
		"\"2019-02-14T21:50:07.940Z\",\"resource_type\":\"capture\","
		"\"resource_version\":\"2.0\",\"event_type\":\"\","
		"\"summary\":\"Payment completed\",\"resource\":{\"id\":"
		"\"\",\"amount\":{\"currency_code\":\"\",\"value\":\"\"},"
		"\"final_capture\":true,\"seller_protection\":{\"status\":"
		"\"ELIGIBLE\"},\"status\":\"COMPLETED\",\"create_time\":"
		"\"2019-02-14T21:49:58Z\",\"update_time\":"
		"\"2019-02-14T21:49:58Z\"}}",
		.currency = "USD",
		.ids = { { "", UPPER36, 17, false },
			 { "WH-", UPPER36, 17, false } },
	},
	/* payment_captured, as checkout.com/docs' example (abridged). */
	[CONFIG_PROVIDER_CHECKOUT] = {
		.template =
		"{\"id\":\"evt_fkfqht6yonme7bk7jawrgzbbxq\",\"source\":"
		"\"gateway\",\"type\":\"\",\"timestamp\":"
		"\"2023-05-24T09:12:32.357+00:00\",\"version\":\"1.0.29\","
		"\"data\":{\"id\":\"\",\"action_id\":"
		"\"act_uqlj3642dyyuroivzdwfg2fysq\",\"reference\":"
		"\"ORD-5023-4E89\",\"amount\":1,\"processed_on\":"
		"\"2023-05-24T09:12:27Z\",\"response_code\":\"10000\","
		"\"currency\":\"\"}}",
		.currency = "EUR",
		.ids = { { "pay_", LOWER36, 26, false },
			 { "evt_", LOWER36, 26, false } },
	},
	/* order_created, the order object of docs.lemonsqueezy.com
	 * (abridged); Lemon Squeezy sends no event id. */
	[CONFIG_PROVIDER_LEMONSQUEEZY] = {
		.template =
		"{\"meta\":{\"test_mode\":false,\"event_name\":\"\"},"
		"\"data\":{\"type\":\"orders\",\"id\":\"\",\"attributes\":"
		"{\"store_id\":1,\"customer_id\":1,\"identifier\":"
		"\"104e18a2-d755-4d4b-80c4-a6c1dcbe1c10\",\"order_number\":1,"
		"\"currency\":\"\",\"subtotal\":1,\"tax\":0,\"total\":1,"
		"\"refunded_amount\":0,\"status\":\"paid\",\"refunded\":"
		"false,\"created_at\":\"2021-08-17T09:45:53.000000Z\","
		"\"updated_at\":\"2021-08-17T09:45:53.000000Z\","
		"\"test_mode\":false}}}",
		.currency = "USD",
		.ids = { { "", DIGITS, 7, false },
			 { "", LOWER36, 24, false } },
	},
	[CONFIG_PROVIDER_GENERIC] = {
		.currency = "USD",
		.ids = { { "", LOWER36, 24, false },
			 { "evt_", LOWER36, 24, false } },
	},
	/* The providers that only notify: their samples are notifications
	 * (lifecycle_samples below); the template is what the API gives for
	 * the payment (GET /v2/payments/{id}: docs.mollie.com's example,
	 * abridged). */
	[CONFIG_PROVIDER_MOLLIE] = {
		.template =
		"{\"resource\":\"payment\",\"id\":\"\",\"mode\":\"test\","
		"\"status\":\"paid\",\"amount\":{\"value\":\"\",\"currency\":"
		"\"\"}}",
		.currency = "EUR",
		.ids = { { "tr_", BASE62, 10, false },
			 { "", BASE62, 10, false } },
	},
	[CONFIG_PROVIDER_MERCADOPAGO] = {
		.template =
		"{\"id\":1,\"status\":\"approved\",\"status_detail\":"
		"\"accredited\",\"transaction_amount\":1,\"currency_id\":\"\","
		"\"refunds\":[]}",
		.currency = "BRL",
		.ids = { { "", DIGITS, 11, false },
			 { "", DIGITS, 11, false } },
		.event_id = "12345",
	},
	[CONFIG_PROVIDER_GOCARDLESS] = {
		.template =
		"{\"payments\":{\"id\":\"\",\"status\":\"confirmed\","
		"\"amount\":1,\"currency\":\"\"}}",
		.currency = "GBP",
		.ids = { { "PM", UPPER36, 12, false },
			 { "EV", UPPER36, 12, false } },
		.event_id = "EV0000SAMPLE01",
	},
};


/* The events a sample can be of: each provider's payment event first, then
 * events of the same object that record nothing (200 ignored), with the
 * fields that differ from the payment event's template set as JSON text.
 * standard has no event type: its one sample is "payment"; Shopify's topic
 * travels in X-Shopify-Topic (payhook-sign --topic), not in the body. */
struct sample_event {
	enum config_provider provider;
	const char *event;
	const char *set[3][2]; /* dotted path, JSON text */
};

static const struct sample_event sample_events[] = {
	{ CONFIG_PROVIDER_STANDARD, "payment", { { NULL, NULL } } },
	{ CONFIG_PROVIDER_STRIPE, "payment_intent.succeeded", { { NULL, NULL } } },
	{ CONFIG_PROVIDER_STRIPE, "payment_intent.created",
	  { { "data.object.status", "\"requires_payment_method\"" },
	    { "data.object.amount_received", "0" } } },
	{ CONFIG_PROVIDER_STRIPE, "payment_intent.processing",
	  { { "data.object.status", "\"processing\"" },
	    { "data.object.amount_received", "0" } } },
	{ CONFIG_PROVIDER_STRIPE, "payment_intent.payment_failed",
	  { { "data.object.status", "\"requires_payment_method\"" },
	    { "data.object.amount_received", "0" } } },
	{ CONFIG_PROVIDER_PADDLE, "transaction.completed", { { NULL, NULL } } },
	{ CONFIG_PROVIDER_PADDLE, "transaction.created",
	  { { "data.status", "\"draft\"" } } },
	{ CONFIG_PROVIDER_PADDLE, "transaction.paid",
	  { { "data.status", "\"paid\"" } } },
	{ CONFIG_PROVIDER_RAZORPAY, "payment.captured", { { NULL, NULL } } },
	{ CONFIG_PROVIDER_RAZORPAY, "payment.authorized",
	  { { "payload.payment.entity.status", "\"authorized\"" },
	    { "payload.payment.entity.captured", "false" } } },
	{ CONFIG_PROVIDER_RAZORPAY, "payment.failed",
	  { { "payload.payment.entity.status", "\"failed\"" },
	    { "payload.payment.entity.captured", "false" } } },
	{ CONFIG_PROVIDER_KOMOJU, "payment.captured", { { NULL, NULL } } },
	{ CONFIG_PROVIDER_KOMOJU, "payment.authorized",
	  { { "data.status", "\"authorized\"" } } },
	{ CONFIG_PROVIDER_KOMOJU, "payment.expired",
	  { { "data.status", "\"expired\"" } } },
	{ CONFIG_PROVIDER_PAYJP, "charge.succeeded", { { NULL, NULL } } },
	{ CONFIG_PROVIDER_PAYJP, "charge.failed",
	  { { "data.paid", "false" }, { "data.captured", "false" } } },
	{ CONFIG_PROVIDER_SQUARE, "payment.updated", { { NULL, NULL } } },
	{ CONFIG_PROVIDER_SQUARE, "payment.created",
	  { { "data.object.payment.status", "\"APPROVED\"" } } },
	{ CONFIG_PROVIDER_SHOPIFY, "orders/paid", { { NULL, NULL } } },
	{ CONFIG_PROVIDER_SHOPIFY, "orders/create",
	  { { "financial_status", "\"pending\"" } } },
	{ CONFIG_PROVIDER_ADYEN, "AUTHORISATION", { { NULL, NULL } } },
	{ CONFIG_PROVIDER_ADYEN, "CAPTURE", { { NULL, NULL } } },
	{ CONFIG_PROVIDER_PAYPAL, "PAYMENT.CAPTURE.COMPLETED", { { NULL, NULL } } },
	{ CONFIG_PROVIDER_PAYPAL, "PAYMENT.CAPTURE.PENDING",
	  { { "resource.status", "\"PENDING\"" } } },
	{ CONFIG_PROVIDER_CHECKOUT, "payment_captured", { { NULL, NULL } } },
	{ CONFIG_PROVIDER_CHECKOUT, "payment_approved", { { NULL, NULL } } },
	{ CONFIG_PROVIDER_LEMONSQUEEZY, "order_created", { { NULL, NULL } } },
};

#define SAMPLE_EVENT_COUNT (sizeof(sample_events) / sizeof(sample_events[0]))

/* Each provider's refund, dispute and cancellation events, abridged from
 * its documentation (the fixtures hold the full examples). Placeholders,
 * filled from the input: @EVENT@ the event (the sample's name, or its
 * type), @STATE@ the provider's status value, @OBJ@ the object's id, @TX@
 * the payment's, @EVT@ the event id, @AMOUNT@ minor units, @DECIMAL@ major
 * units, @CUR@ the currency, @UNIX@ and @TIME@ the event time (Unix
 * seconds, RFC 3339). */
#define STANDARD_LC                                                            \
	"{\"type\":\"@EVENT@\",\"object_id\":\"@OBJ@\",\"transaction_id\":"    \
	"\"@TX@\",\"amount\":@AMOUNT@,\"currency\":\"@CUR@\",\"state\":"       \
	"\"@STATE@\",\"occurred_at\":\"@TIME@\"}"
#define STRIPE_LC(object)                                                      \
	"{\"id\":\"@EVT@\",\"object\":\"event\",\"api_version\":"              \
	"\"2024-06-20\",\"created\":@UNIX@,\"data\":{\"object\":{\"id\":"      \
	"\"@OBJ@\",\"object\":\"" object "\",\"amount\":@AMOUNT@,"             \
	"\"currency\":\"@CUR@\",\"payment_intent\":\"@TX@\",\"status\":"       \
	"\"@STATE@\"}},\"livemode\":false,\"pending_webhooks\":1,\"type\":"    \
	"\"@EVENT@\"}"
#define PADDLE_LC(event, action)                                               \
	"{\"event_id\":\"@EVT@\",\"event_type\":\"" event "\",\"occurred_at\":"\
	"\"@TIME@\",\"notification_id\":\"ntf_01h8e1jxna32kc43ev1vkqsq8y\","   \
	"\"data\":{\"id\":\"@OBJ@\",\"action\":\"" action "\","                \
	"\"transaction_id\":\"@TX@\",\"status\":\"@STATE@\",\"currency_code\":"\
	"\"@CUR@\",\"totals\":{\"subtotal\":\"@AMOUNT@\",\"tax\":\"0\","       \
	"\"total\":\"@AMOUNT@\"}}}"
#define RAZORPAY_LC(entity)                                                    \
	"{\"entity\":\"event\",\"account_id\":\"acc_BFQ7uQEaa7j2z7\","         \
	"\"event\":\"@EVENT@\",\"contains\":[\"" entity "\"],\"payload\":{\""  \
	entity "\":{\"entity\":{\"id\":\"@OBJ@\",\"entity\":\"" entity "\","   \
	"\"amount\":@AMOUNT@,\"currency\":\"@CUR@\",\"payment_id\":\"@TX@\","  \
	"\"status\":\"@STATE@\"}}},\"created_at\":@UNIX@}"
#define KOMOJU_LC                                                              \
	"{\"id\":\"@EVT@\",\"type\":\"@EVENT@\",\"resource\":\"event\","       \
	"\"data\":{\"id\":\"@TX@\",\"resource\":\"payment\",\"status\":"       \
	"\"@STATE@\",\"amount\":@AMOUNT@,\"currency\":\"@CUR@\",\"refunds\":[{"\
	"\"id\":\"@OBJ@\",\"resource\":\"refund\",\"amount\":@AMOUNT@,"        \
	"\"currency\":\"@CUR@\",\"payment\":\"@TX@\",\"created_at\":"          \
	"\"@TIME@\",\"chargeback\":false}]},\"created_at\":\"@TIME@\","        \
	"\"reason\":null}"
#define PAYJP_LC(field)                                                        \
	"{\"id\":\"@EVT@\",\"object\":\"event\",\"livemode\":false,"           \
	"\"created\":@UNIX@,\"pending_webhooks\":1,\"type\":\"@EVENT@\","      \
	"\"data\":{\"id\":\"@TX@\",\"object\":\"charge\",\"" field "\":"       \
	"@AMOUNT@,\"currency\":\"@CUR@\",\"paid\":true,\"captured\":true,"     \
	"\"refunded\":@STATE@}}"
#define SQUARE_REFUND_LC                                                       \
	"{\"merchant_id\":\"6SSW7HV8K2ST5\",\"type\":\"@EVENT@\",\"event_id\":"\
	"\"@EVT@\",\"created_at\":\"@TIME@\",\"data\":{\"type\":\"refund\","   \
	"\"id\":\"@OBJ@\",\"object\":{\"refund\":{\"id\":\"@OBJ@\","           \
	"\"payment_id\":\"@TX@\",\"amount_money\":{\"amount\":@AMOUNT@,"       \
	"\"currency\":\"@CUR@\"},\"status\":\"@STATE@\"}}}}"
#define SQUARE_DISPUTE_LC                                                      \
	"{\"merchant_id\":\"6SSW7HV8K2ST5\",\"type\":\"@EVENT@\",\"event_id\":"\
	"\"@EVT@\",\"created_at\":\"@TIME@\",\"data\":{\"type\":\"dispute\","  \
	"\"id\":\"@OBJ@\",\"object\":{\"dispute\":{\"id\":\"@OBJ@\","          \
	"\"amount_money\":{\"amount\":@AMOUNT@,\"currency\":\"@CUR@\"},"       \
	"\"disputed_payment\":{\"payment_id\":\"@TX@\"},\"state\":"            \
	"\"@STATE@\"}}}}"
#define SHOPIFY_REFUND_LC                                                      \
	"{\"id\":@OBJ@,\"order_id\":@TX@,\"created_at\":\"@TIME@\","           \
	"\"restock\":false,\"transactions\":[{\"id\":1,\"order_id\":@TX@,"     \
	"\"kind\":\"refund\",\"status\":\"@STATE@\",\"amount\":\"@DECIMAL@\"," \
	"\"currency\":\"@CUR@\"}]}"
#define SHOPIFY_DISPUTE_LC                                                     \
	"{\"id\":@OBJ@,\"order_id\":@TX@,\"type\":\"chargeback\","             \
	"\"currency\":\"@CUR@\",\"amount\":\"@DECIMAL@\",\"reason\":"          \
	"\"fraudulent\",\"status\":\"@STATE@\",\"initiated_at\":\"@TIME@\","   \
	"\"finalized_on\":null}"
#define ADYEN_LC(extra)                                                        \
	"{\"live\":\"false\",\"notificationItems\":[{"                         \
	"\"NotificationRequestItem\":{\"additionalData\":{"                    \
	"\"hmacSignature\":\"\"" extra "},\"amount\":{\"currency\":\"@CUR@\"," \
	"\"value\":@AMOUNT@},\"eventCode\":\"@EVENT@\",\"eventDate\":"         \
	"\"@TIME@\",\"merchantAccountCode\":\"TestMerchant\","                 \
	"\"merchantReference\":\"order-1\",\"originalReference\":\"@TX@\","    \
	"\"pspReference\":\"@OBJ@\",\"success\":\"@STATE@\"}}]}"

#define PAYPAL_REFUND_LC                                                       \
	"{\"id\":\"@EVT@\",\"event_version\":\"1.0\",\"create_time\":"        \
	"\"@TIME@\",\"resource_type\":\"refund\",\"event_type\":"          \
	"\"@EVENT@\",\"resource\":{\"id\":\"@OBJ@\",\"amount\":{"          \
	"\"currency_code\":\"@CUR@\",\"value\":\"@DECIMAL@\"},\"status\":"   \
	"\"@STATE@\",\"create_time\":\"@TIME@\",\"update_time\":"          \
	"\"@TIME@\",\"links\":[{\"href\":"                                  \
	"\"https://api.paypal.com/v2/payments/refunds/@OBJ@\",\"rel\":"      \
	"\"self\",\"method\":\"GET\"},{\"href\":"                          \
	"\"https://api.paypal.com/v2/payments/captures/@TX@\",\"rel\":"      \
	"\"up\",\"method\":\"GET\"}]}}"
#define PAYPAL_DISPUTE_LC(status, outcome)                                     \
	"{\"id\":\"@EVT@\",\"event_version\":\"1.0\",\"create_time\":"        \
	"\"@TIME@\",\"resource_type\":\"dispute\",\"event_type\":"         \
	"\"@EVENT@\",\"resource\":{\"dispute_id\":\"@OBJ@\","                \
	"\"disputed_transactions\":[{\"seller_transaction_id\":\"@TX@\"}],"    \
	"\"reason\":\"MERCHANDISE_OR_SERVICE_NOT_RECEIVED\",\"status\":"      \
	"\"" status "\",\"dispute_amount\":{\"currency_code\":\"@CUR@\","    \
	"\"value\":\"@DECIMAL@\"}" outcome ",\"create_time\":\"@TIME@\","    \
	"\"update_time\":\"@TIME@\"}}"
#define CHECKOUT_REFUND_LC                                                     \
	"{\"id\":\"@EVT@\",\"type\":\"@EVENT@\",\"version\":\"1.0.29\","       \
	"\"created_on\":\"@TIME@\",\"data\":{\"id\":\"@TX@\",\"action_id\":"  \
	"\"@OBJ@\",\"amount\":@AMOUNT@,\"currency\":\"@CUR@\","               \
	"\"processed_on\":\"@TIME@\"}}"
#define CHECKOUT_DISPUTE_LC                                                    \
	"{\"id\":\"@EVT@\",\"type\":\"@EVENT@\",\"version\":\"2.0\","          \
	"\"timestamp\":\"@TIME@\",\"data\":{\"id\":\"@OBJ@\",\"category\":"   \
	"\"fraudulent\",\"amount\":@AMOUNT@,\"currency\":\"@CUR@\","          \
	"\"reason_code\":\"10.4\",\"payment_id\":\"@TX@\"}}"
/* The notifications of the providers that only notify: Mollie's form
 * post (docs.mollie.com/reference/webhooks), Mercado Pago's JSON body
 * (its webhooks guide; data.id goes in the query too), GoCardless's
 * events (developer.gocardless.com's example, with a payment's or a
 * refund's links). */
#define MOLLIE_NOTICE "id=@OBJ@"
#define MERCADOPAGO_NOTICE                                                     \
	"{\"id\":\"@EVT@\",\"live_mode\":true,\"type\":\"payment\","            \
	"\"date_created\":\"@TIME@\",\"user_id\":44444,\"api_version\":"      \
	"\"v1\",\"action\":\"@EVENT@\",\"data\":{\"id\":\"@TX@\"}}"
#define GOCARDLESS_NOTICE(resource, links)                                     \
	"{\"events\":[{\"id\":\"@EVT@\",\"created_at\":\"@TIME@\","          \
	"\"action\":\"@STATE@\",\"resource_type\":\"" resource "\","          \
	"\"links\":{" links ",\"organisation\":\"OR123\"},\"details\":{"     \
	"\"origin\":\"gocardless\",\"cause\":\"" resource "_@STATE@\"}}],"    \
	"\"meta\":{\"webhook_id\":\"WB123\"}}"
#define LEMONSQUEEZY_LC                                                        \
	"{\"meta\":{\"test_mode\":false,\"event_name\":\"@EVENT@\"},"        \
	"\"data\":{\"type\":\"orders\",\"id\":\"@TX@\",\"attributes\":{"    \
	"\"store_id\":1,\"currency\":\"@CUR@\",\"total\":@AMOUNT@,"          \
	"\"refunded_amount\":@AMOUNT@,\"status\":\"@STATE@\",\"refunded\":"  \
	"true,\"updated_at\":\"@TIME@\"}}}"

/* A refund, dispute or cancellation sample: its name (what --sample
 * takes), the event type when it differs from the name, its template, the
 * provider's status value, and the prefix of an object id derived from the
 * payment's (NULL: the object's id is the payment's own, or an integer). */
struct lifecycle_sample {
	enum config_provider provider;
	const char *name, *event, *template, *state, *object_prefix;
};

static const struct lifecycle_sample lifecycle_samples[] = {
	{ CONFIG_PROVIDER_STANDARD, "refund", NULL, STANDARD_LC, "succeeded", "re_" },
	{ CONFIG_PROVIDER_STANDARD, "refund.pending", "refund", STANDARD_LC, "pending", "re_" },
	{ CONFIG_PROVIDER_STANDARD, "refund.failed", "refund", STANDARD_LC, "failed", "re_" },
	{ CONFIG_PROVIDER_STANDARD, "dispute", NULL, STANDARD_LC, "open", "dp_" },
	{ CONFIG_PROVIDER_STANDARD, "dispute.won", "dispute", STANDARD_LC, "won", "dp_" },
	{ CONFIG_PROVIDER_STANDARD, "dispute.lost", "dispute", STANDARD_LC, "lost", "dp_" },
	{ CONFIG_PROVIDER_STANDARD, "cancellation", NULL, STANDARD_LC, "succeeded", "cn_" },
	{ CONFIG_PROVIDER_STRIPE, "refund.created", NULL, STRIPE_LC("refund"), "pending", "re_" },
	{ CONFIG_PROVIDER_STRIPE, "refund.updated", NULL, STRIPE_LC("refund"), "succeeded", "re_" },
	{ CONFIG_PROVIDER_STRIPE, "refund.failed", NULL, STRIPE_LC("refund"), "failed", "re_" },
	{ CONFIG_PROVIDER_STRIPE, "charge.dispute.created", NULL, STRIPE_LC("dispute"), "needs_response", "du_" },
	{ CONFIG_PROVIDER_STRIPE, "charge.dispute.updated", NULL, STRIPE_LC("dispute"), "under_review", "du_" },
	{ CONFIG_PROVIDER_STRIPE, "charge.dispute.closed", NULL, STRIPE_LC("dispute"), "lost", "du_" },
	{ CONFIG_PROVIDER_PADDLE, "adjustment.created", NULL, PADDLE_LC("adjustment.created", "refund"), "pending_approval", "adj_" },
	{ CONFIG_PROVIDER_PADDLE, "adjustment.updated", NULL, PADDLE_LC("adjustment.updated", "refund"), "approved", "adj_" },
	{ CONFIG_PROVIDER_PADDLE, "chargeback_warning", NULL, PADDLE_LC("adjustment.created", "chargeback_warning"), "approved", "adj_w" },
	{ CONFIG_PROVIDER_PADDLE, "chargeback", NULL, PADDLE_LC("adjustment.created", "chargeback"), "approved", "adj_c" },
	{ CONFIG_PROVIDER_PADDLE, "chargeback_reverse", NULL, PADDLE_LC("adjustment.created", "chargeback_reverse"), "approved", "adj_r" },
	{ CONFIG_PROVIDER_RAZORPAY, "refund.created", NULL, RAZORPAY_LC("refund"), "pending", "rfnd_" },
	{ CONFIG_PROVIDER_RAZORPAY, "refund.processed", NULL, RAZORPAY_LC("refund"), "processed", "rfnd_" },
	{ CONFIG_PROVIDER_RAZORPAY, "refund.failed", NULL, RAZORPAY_LC("refund"), "failed", "rfnd_" },
	{ CONFIG_PROVIDER_RAZORPAY, "payment.dispute.created", NULL, RAZORPAY_LC("dispute"), "open", "disp_" },
	{ CONFIG_PROVIDER_RAZORPAY, "payment.dispute.won", NULL, RAZORPAY_LC("dispute"), "won", "disp_" },
	{ CONFIG_PROVIDER_RAZORPAY, "payment.dispute.lost", NULL, RAZORPAY_LC("dispute"), "lost", "disp_" },
	{ CONFIG_PROVIDER_RAZORPAY, "payment.dispute.closed", NULL, RAZORPAY_LC("dispute"), "closed", "disp_" },
	{ CONFIG_PROVIDER_KOMOJU, "payment.refunded", NULL, KOMOJU_LC, "refunded", "r" },
	{ CONFIG_PROVIDER_KOMOJU, "payment.refund.created", NULL, KOMOJU_LC, "captured", "r" },
	{ CONFIG_PROVIDER_PAYJP, "charge.refunded", NULL, PAYJP_LC("amount_refunded"), "true", NULL },
	{ CONFIG_PROVIDER_PAYJP, "dispute.created", NULL, PAYJP_LC("amount"), "false", NULL },
	{ CONFIG_PROVIDER_SQUARE, "refund.created", NULL, SQUARE_REFUND_LC, "PENDING", "R" },
	{ CONFIG_PROVIDER_SQUARE, "refund.updated", NULL, SQUARE_REFUND_LC, "COMPLETED", "R" },
	{ CONFIG_PROVIDER_SQUARE, "dispute.created", NULL, SQUARE_DISPUTE_LC, "EVIDENCE_REQUIRED", "D" },
	{ CONFIG_PROVIDER_SQUARE, "dispute.state.updated", NULL, SQUARE_DISPUTE_LC, "WON", "D" },
	{ CONFIG_PROVIDER_SHOPIFY, "refunds/create", NULL, SHOPIFY_REFUND_LC, "success", NULL },
	{ CONFIG_PROVIDER_SHOPIFY, "disputes/create", NULL, SHOPIFY_DISPUTE_LC, "needs_response", NULL },
	{ CONFIG_PROVIDER_SHOPIFY, "disputes/update", NULL, SHOPIFY_DISPUTE_LC, "won", NULL },
	{ CONFIG_PROVIDER_ADYEN, "REFUND", NULL, ADYEN_LC(""), "true", "R" },
	{ CONFIG_PROVIDER_ADYEN, "REFUND_FAILED", NULL, ADYEN_LC(""), "true", "R" },
	{ CONFIG_PROVIDER_ADYEN, "REFUNDED_REVERSED", NULL, ADYEN_LC(""), "true", "R" },
	{ CONFIG_PROVIDER_ADYEN, "NOTIFICATION_OF_CHARGEBACK", NULL, ADYEN_LC(""), "true", "C" },
	{ CONFIG_PROVIDER_ADYEN, "CHARGEBACK", NULL, ADYEN_LC(""), "true", "C" },
	{ CONFIG_PROVIDER_ADYEN, "SECOND_CHARGEBACK", NULL, ADYEN_LC(""), "true", "C" },
	{ CONFIG_PROVIDER_ADYEN, "CHARGEBACK_REVERSED", NULL, ADYEN_LC(""), "true", "C" },
	{ CONFIG_PROVIDER_ADYEN, "PREARBITRATION_WON", NULL, ADYEN_LC(""), "true", "C" },
	{ CONFIG_PROVIDER_ADYEN, "CANCELLATION", NULL, ADYEN_LC(""), "true", "X" },
	{ CONFIG_PROVIDER_ADYEN, "CANCEL_OR_REFUND", NULL, ADYEN_LC(",\"modification.action\":\"cancel\""), "true", "X" },
	{ CONFIG_PROVIDER_PAYPAL, "PAYMENT.CAPTURE.REFUNDED", NULL, PAYPAL_REFUND_LC, "COMPLETED", "R" },
	{ CONFIG_PROVIDER_PAYPAL, "PAYMENT.CAPTURE.REVERSED", NULL, PAYPAL_REFUND_LC, "COMPLETED", "V" },
	{ CONFIG_PROVIDER_PAYPAL, "CUSTOMER.DISPUTE.CREATED", NULL, PAYPAL_DISPUTE_LC("OPEN", ""), "OPEN", "PP-" },
	{ CONFIG_PROVIDER_PAYPAL, "CUSTOMER.DISPUTE.UPDATED", NULL, PAYPAL_DISPUTE_LC("UNDER_REVIEW", ""), "UNDER_REVIEW", "PP-" },
	{ CONFIG_PROVIDER_PAYPAL, "CUSTOMER.DISPUTE.RESOLVED", NULL, PAYPAL_DISPUTE_LC("RESOLVED", ",\"dispute_outcome\":{\"outcome_code\":\"@STATE@\"}"), "RESOLVED_BUYER_FAVOUR", "PP-" },
	{ CONFIG_PROVIDER_CHECKOUT, "payment_refunded", NULL, CHECKOUT_REFUND_LC, "", "act_" },
	{ CONFIG_PROVIDER_CHECKOUT, "payment_refund_pending", NULL, CHECKOUT_REFUND_LC, "", "act_" },
	{ CONFIG_PROVIDER_CHECKOUT, "dispute_received", NULL, CHECKOUT_DISPUTE_LC, "", "dsp_" },
	{ CONFIG_PROVIDER_CHECKOUT, "dispute_won", NULL, CHECKOUT_DISPUTE_LC, "", "dsp_" },
	{ CONFIG_PROVIDER_CHECKOUT, "dispute_lost", NULL, CHECKOUT_DISPUTE_LC, "", "dsp_" },
	{ CONFIG_PROVIDER_LEMONSQUEEZY, "order_refunded", NULL, LEMONSQUEEZY_LC, "refunded", NULL },
	{ CONFIG_PROVIDER_MOLLIE, "payment", NULL, MOLLIE_NOTICE, "", "tr_" },
	{ CONFIG_PROVIDER_MERCADOPAGO, "payment.updated", NULL, MERCADOPAGO_NOTICE, "", NULL },
	{ CONFIG_PROVIDER_MERCADOPAGO, "payment.created", NULL, MERCADOPAGO_NOTICE, "", NULL },
	{ CONFIG_PROVIDER_GOCARDLESS, "payments.confirmed", NULL, GOCARDLESS_NOTICE("payments", "\"payment\":\"@OBJ@\""), "confirmed", "PM" },
	{ CONFIG_PROVIDER_GOCARDLESS, "payments.paid_out", NULL, GOCARDLESS_NOTICE("payments", "\"payment\":\"@OBJ@\""), "paid_out", "PM" },
	{ CONFIG_PROVIDER_GOCARDLESS, "payments.charged_back", NULL, GOCARDLESS_NOTICE("payments", "\"payment\":\"@OBJ@\""), "charged_back", "PM" },
	{ CONFIG_PROVIDER_GOCARDLESS, "payments.chargeback_cancelled", NULL, GOCARDLESS_NOTICE("payments", "\"payment\":\"@OBJ@\""), "chargeback_cancelled", "PM" },
	{ CONFIG_PROVIDER_GOCARDLESS, "refunds.paid", NULL, GOCARDLESS_NOTICE("refunds", "\"refund\":\"@OBJ@\",\"payment\":\"PM@TX@\""), "paid", "RF" },
};

#define LIFECYCLE_SAMPLE_COUNT                                                 \
	(sizeof(lifecycle_samples) / sizeof(lifecycle_samples[0]))

static const struct lifecycle_sample *
find_lifecycle_sample(enum config_provider provider, const char *name)
{
	/* NULL: the first (a provider that only notifies has no payment
	 * event sample: its notification is its first). */
	for (size_t i = 0; i < LIFECYCLE_SAMPLE_COUNT; i++)
		if (lifecycle_samples[i].provider == provider &&
		    (name == NULL || strcmp(lifecycle_samples[i].name, name) == 0))
			return &lifecycle_samples[i];
	return NULL;
}

/* The sample of event (NULL: the payment event) of provider, or NULL. */
static const struct sample_event *find_sample(enum config_provider provider,
					      const char *event)
{
	for (size_t i = 0; i < SAMPLE_EVENT_COUNT; i++) {
		if (sample_events[i].provider != provider)
			continue;
		if (event == NULL || strcmp(event, sample_events[i].event) == 0)
			return &sample_events[i];
	}
	return NULL;
}

const char *sample_name(enum config_provider provider, size_t index)
{
	for (size_t i = 0; i < SAMPLE_EVENT_COUNT; i++)
		if (sample_events[i].provider == provider && index-- == 0)
			return sample_events[i].event;
	for (size_t i = 0; i < LIFECYCLE_SAMPLE_COUNT; i++)
		if (lifecycle_samples[i].provider == provider && index-- == 0)
			return lifecycle_samples[i].name;
	return NULL;
}

/* err: "no sample of EVENT for NAME", and where its samples are listed
 * (a list here would not fit an error's bound). */
static void no_such_sample(enum config_provider provider, const char *event,
			   struct error *err)
{
	error_set(err, "no sample of event '%.64s' for %s (payhook-sign --help "
		  "lists the samples of each provider)", event,
		  config_provider_name(provider));
}

const char *sample_test_none(enum config_provider provider)
{
	if (provider == CONFIG_PROVIDER_GENERIC)
		return "the generic profile's fields are the generic_ keys': "
		       "no sample knows them";
	return NULL;
}

int sample_id(enum config_provider provider, enum sample_id_kind kind,
		     const unsigned char *rnd, size_t n, char *out, size_t cap)
{
	const struct id_shape *shape;
	size_t alphabet, used;

	if ((unsigned)provider >= CONFIG_PROVIDER_COUNT)
		return -1;
	shape = &samples[provider].ids[kind == SAMPLE_ID_EVENT];
	alphabet = strlen(shape->alphabet);
	used = strlen(shape->prefix);
	if (n < shape->len || cap < used + shape->len + 5)
		return -1;
	memcpy(out, shape->prefix, used);
	for (size_t i = 0; i < shape->len; i++) {
		if (shape->uuid && (i == 8 || i == 12 || i == 16 || i == 20))
			out[used++] = '-';
		out[used++] = shape->alphabet[rnd[i] % alphabet];
	}
	/* A leading zero would not survive Shopify's integer ids. */
	if (shape->alphabet[0] == '0' && alphabet == 10 && out[0] == '0')
		out[0] = '1';
	out[used] = '\0';
	return 0;
}

/* Sets value at a dotted path of existing objects; takes value. */
static int set_path(struct json_object *node, const char *path,
		    struct json_object *value)
{
	char step[64];

	while (strchr(path, '.') != NULL) {
		size_t n = strcspn(path, ".");

		if (n >= sizeof(step))
			break;
		memcpy(step, path, n);
		step[n] = '\0';
		if (!json_object_object_get_ex(node, step, &node))
			break;
		path += n + 1;
	}
	if (strchr(path, '.') != NULL || value == NULL ||
	    json_object_object_add(node, path, value) != 0) {
		json_object_put(value);
		return -1;
	}
	return 0;
}

/* amount minor units as a decimal in major units ("19.99"). */
static int decimal_text(int64_t amount, const char *currency, char *out,
			size_t cap)
{
	int exponent = currency_exponent(currency);
	int64_t scale = 1;

	/* ISO 4217 exponents are 0 to 4. */
	if (exponent < 0 || exponent > 4)
		return -1;
	for (int i = 0; i < exponent; i++)
		scale *= 10;
	if (exponent == 0)
		snprintf(out, cap, "%lld", (long long)amount);
	else
		snprintf(out, cap, "%lld.%0*d", (long long)(amount / scale),
			 exponent, (int)(amount % scale));
	return 0;
}

/* Whether text may stand inside a JSON string as it is (visible ASCII,
 * no quote, no backslash). */
static bool plain_text(const char *text)
{
	for (; *text != '\0'; text++)
		if (*text < 0x21 || *text > 0x7E || *text == '"' || *text == '\\')
			return false;
	return true;
}

/* A lifecycle sample's text: its template with the placeholders filled
 * from in (checked by the caller: amount, currency, transaction id), then
 * parsed and written as the payment samples are. Returns a new string the
 * caller frees, or NULL with err set. */
static char *lifecycle_text(const struct lifecycle_sample *ls,
			    const struct sample_input *in,
			    const char *currency, struct error *err)
{
	char object[160], amount[32], decimal[32], unix_time[32], rfc3339[32];
	const char *names[] = { "EVENT", "STATE", "OBJ", "TX", "EVT", "AMOUNT",
				"DECIMAL", "CUR", "UNIX", "TIME" };
	const char *values[10];
	time_t when = in->occurred_at != 0 ? (time_t)in->occurred_at
					   : (time_t)1718597005;
	size_t len = strlen(ls->template), cap, used = 0;
	struct json_object *root;
	char *text, *out = NULL;

	if (ls->object_prefix == NULL &&
	    in->provider == CONFIG_PROVIDER_SHOPIFY) {
		/* An integer: 1 and the order's last 12 digits. */
		size_t n = strlen(in->transaction_id);

		snprintf(object, sizeof(object), "1%s",
			 in->transaction_id + (n > 12 ? n - 12 : 0));
	} else {
		snprintf(object, sizeof(object), "%s%s",
			 ls->object_prefix != NULL ? ls->object_prefix : "",
			 in->transaction_id);
	}
	if (in->object_id != NULL)
		snprintf(object, sizeof(object), "%s", in->object_id);
	snprintf(amount, sizeof(amount), "%lld", (long long)in->amount);
	snprintf(unix_time, sizeof(unix_time), "%lld", (long long)when);
	if (in->occurred_at < 0 ||
	    utc_format(when, UTC_RFC3339, rfc3339, sizeof(rfc3339)) != 0) {
		error_set(err, "the event time is out of range");
		return NULL;
	}
	if (decimal_text(in->amount, currency, decimal, sizeof(decimal)) != 0)
		snprintf(decimal, sizeof(decimal), "%s", amount);
	values[0] = ls->event != NULL ? ls->event : ls->name;
	values[1] = ls->state;
	values[2] = object;
	values[3] = in->transaction_id;
	values[4] = in->event_id != NULL ? in->event_id :
		    samples[in->provider].event_id != NULL ?
			    samples[in->provider].event_id : "evt_sample";
	values[5] = amount;
	values[6] = decimal;
	values[7] = currency;
	values[8] = unix_time;
	values[9] = rfc3339;
	for (size_t i = 2; i < 5; i++)
		if (strlen(values[i]) > 128 || !plain_text(values[i])) {
			error_set(err, "an id of a sample is 1 to 128 visible "
				  "characters, without quotes or backslashes");
			return NULL;
		}
	/* Every placeholder is at least 3 bytes and no value is over 160. */
	cap = len + len / 3 * 160 + 1;
	text = malloc(cap);
	if (text == NULL) {
		error_set(err, "out of memory");
		return NULL;
	}
	for (const char *t = ls->template; *t != '\0';) {
		const char *end = t[0] == '@' ? strchr(t + 1, '@') : NULL;
		size_t k = 0, n;

		for (; end != NULL && k < 10; k++)
			if (strlen(names[k]) == (size_t)(end - t - 1) &&
			    memcmp(names[k], t + 1, (size_t)(end - t - 1)) == 0)
				break;
		if (end == NULL || k == 10) {
			text[used++] = *t++;
			continue;
		}
		n = strlen(values[k]);
		memcpy(text + used, values[k], n);
		used += n;
		t = end + 1;
	}
	text[used] = '\0';
	/* A form (Mollie's notification) goes as it is. */
	if (ls->template[0] != '{')
		return text;
	root = json_tokener_parse(text);
	free(text);
	if (root != NULL) {
		const char *plain = json_object_to_json_string_ext(
			root, JSON_C_TO_STRING_PLAIN |
				      JSON_C_TO_STRING_NOSLASHESCAPE);

		out = plain != NULL ? strdup(plain) : NULL;
		json_object_put(root);
	}
	if (out == NULL)
		error_set(err, "could not build the sample (an id that is not "
			  "an integer where the provider's are?)");
	return out;
}

char *sample_event(const struct sample_input *in, struct error *err)
{
	const struct sample_event *sample;
	const struct lifecycle_sample *lifecycle;
	struct provider_fields f;
	struct json_object *root, *node;
	char currency[4], number[32];
	const char *text;
	char *out = NULL;
	const struct sample_profile *row;
	const char *in_currency;
	int rc = 0;

	if ((unsigned)in->provider >= CONFIG_PROVIDER_COUNT ||
	    samples[in->provider].template == NULL) {
		error_set(err, "no sample for this provider");
		return NULL;
	}
	row = &samples[in->provider];
	in_currency = in->currency != NULL ? in->currency : row->currency;
	sample = find_sample(in->provider, in->event);
	lifecycle = sample == NULL ? find_lifecycle_sample(in->provider,
							   in->event)
				   : NULL;
	if (sample == NULL && lifecycle == NULL) {
		no_such_sample(in->provider, in->event, err);
		return NULL;
	}
	if (strlen(in_currency) != 3 ||
	    in->transaction_id == NULL || in->transaction_id[0] == '\0' ||
	    in->amount < 1) {
		error_set(err, "a sample needs a transaction id, an amount of at "
			  "least 1 and a 3-letter currency");
		return NULL;
	}
	for (int i = 0; i < 3; i++) {
		unsigned char c = (unsigned char)in_currency[i];

		currency[i] = (char)(row->lower_currency ? tolower(c)
							 : toupper(c));
	}
	currency[3] = '\0';
	if (lifecycle != NULL)
		return lifecycle_text(lifecycle, in, currency, err);
	provider_fields(in->provider, &f);
	root = json_tokener_parse(row->template);
	if (root == NULL) {
		error_set(err, "out of memory");
		return NULL;
	}
	node = root;
	if (row->first_item)
		node = json_object_object_get(json_object_array_get_idx(
			json_object_object_get(root, "notificationItems"), 0),
		"NotificationRequestItem");
	if (f.event_path != NULL)
		rc |= set_path(node, f.event_path,
			       json_object_new_string(sample->event));
	if (f.id_integer) {
		char *end;
		long long id = strtoll(in->transaction_id, &end, 10);

		if (*end != '\0' || id < 1) {
			error_set(err, "this provider's ids are positive "
				  "integers");
			json_object_put(root);
			return NULL;
		}
		rc |= set_path(node, f.id_path, json_object_new_int64(id));
	} else {
		rc |= set_path(node, f.id_path,
			       json_object_new_string(in->transaction_id));
	}
	if (row->also_id_path != NULL)
		rc |= set_path(node, row->also_id_path,
			       json_object_new_string(in->transaction_id));
	if (row->also_amount_path != NULL)
		rc |= set_path(node, row->also_amount_path,
			       json_object_new_int64(in->amount));
	rc |= set_path(node, f.currency_path, json_object_new_string(currency));
	switch (f.amount_form) {
	case PAYLOAD_AMOUNT_INTEGER:
		rc |= set_path(node, f.amount_path,
			       json_object_new_int64(in->amount));
		break;
	case PAYLOAD_AMOUNT_MINOR_STRING:
		snprintf(number, sizeof(number), "%lld", (long long)in->amount);
		rc |= set_path(node, f.amount_path,
			       json_object_new_string(number));
		break;
	case PAYLOAD_AMOUNT_DECIMAL:
	case PAYLOAD_AMOUNT_DECIMAL_NUMBER:
		if (decimal_text(in->amount, currency, number,
				 sizeof(number)) != 0) {
			error_set(err, "no known ISO 4217 exponent for the "
				  "currency");
			json_object_put(root);
			return NULL;
		}
		rc |= set_path(node, f.amount_path,
			       f.amount_form == PAYLOAD_AMOUNT_DECIMAL ?
				       json_object_new_string(number) :
				       json_tokener_parse(number));
		break;
	}
	if (in->event_id != NULL && f.event_id_path != NULL)
		rc |= set_path(node, f.event_id_path,
			       json_object_new_string(in->event_id));
	/* What the event's object holds at that point (after the payment
	 * fields, which some of these overwrite: nothing received yet). */
	for (size_t i = 0; i < 3 && sample->set[i][0] != NULL; i++)
		rc |= set_path(node, sample->set[i][0],
			       json_tokener_parse(sample->set[i][1]));
	text = rc == 0 ? json_object_to_json_string_ext(
				 root, JSON_C_TO_STRING_PLAIN |
					       JSON_C_TO_STRING_NOSLASHESCAPE)
		       : NULL;
	if (text != NULL)
		out = strdup(text);
	if (out == NULL)
		error_set(err, "could not build the sample");
	json_object_put(root);
	return out;
}
