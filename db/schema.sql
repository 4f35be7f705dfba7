-- payhook: the payments table, one row per transaction recorded exactly once,
-- and payment_events, one row per refund, dispute or cancellation of one.
-- Load it into the database you chose (this file creates no database):
--     mariadb DBNAME < db/schema.sql        (or: mysql DBNAME < db/schema.sql)
-- It is idempotent: loading it again changes nothing. A table created by an
-- earlier payhook is not changed by it: run the db/migrate-*.sql files in
-- order instead (payhook --check-config says which one is missing).
--
-- provider is the profile that received the webhook ('standard', 'stripe',
-- ...); the unique key is on (provider, transaction_id), so one id from two
-- providers is two transactions. Its name, uq_payments_provider_transaction_id,
-- is what payhook --check-config looks for.
--
-- transaction_id is VARBINARY, so it is compared byte for byte: 'abc', 'ABC'
-- and 'abc ' are three different ids. A VARCHAR with the usual case-insensitive
-- collation (utf8mb4_general_ci, latin1_swedish_ci) would treat 'abc' and 'ABC'
-- as equal, and a PAD SPACE collation would treat 'abc' and 'abc ' as equal:
-- the unique key would then turn a genuine new transaction into a "duplicate".
--
-- event_id is the provider's id of the event that recorded the payment (the
-- Stripe event id, the webhook-id of Standard Webhooks...), NULL when the
-- provider sends none.
--
-- received_at is DATETIME (not TIMESTAMP, which ends in 2038), in UTC: payhook
-- sets its session's time_zone to +00:00.
--
-- The dispatch_ columns are payhook-dispatch's: the hand-off of each payment
-- to the merchant's fulfilment. A new row is pending and due at once;
-- dispatch_due_at is when it may next be claimed (a claim moves it to the end
-- of the claim's lease), NULL once the payment is delivered or dead.
-- dispatch_token grows by one at every claim: a dispatcher records its result
-- only while the token is still the one it claimed with, so one that was
-- paused past its lease changes nothing. ix_payments_dispatch_due keeps
-- finding due payments cheap at millions of rows; ix_payments_dispatch_state
-- keeps counting the dead ones (the metrics, --requeue) cheap.
--
-- refunded_amount, dispute_state and cancelled are the payment's lifecycle
-- totals: the sum of its succeeded refunds (0 when none), the state of its
-- newest dispute (NULL when none) and whether it was cancelled (voided).
-- They change with the payment_events rows below, in one transaction.
--
-- source says how the row came: 'webhook' (delivered to payhook),
-- 'reconcile' (payhook-reconcile found it in the provider's API) or 'replay'
-- (replayed from the inbox). It is set when the row is inserted and never
-- changed; payment_events has the same column.
--
-- payload holds the raw request body; MEDIUMBLOB (up to 16 MiB) because a BLOB
-- stops at 65535 bytes, one byte short of the default max_body_bytes.

CREATE TABLE IF NOT EXISTS payments (
    id             BIGINT UNSIGNED AUTO_INCREMENT PRIMARY KEY,
    provider       VARCHAR(32) CHARACTER SET ascii COLLATE ascii_bin NOT NULL
                   DEFAULT 'standard',
    transaction_id VARBINARY(128) NOT NULL,
    event_id       VARBINARY(255) NULL,
    amount         BIGINT UNSIGNED NOT NULL,
    currency       CHAR(3) CHARACTER SET ascii COLLATE ascii_bin NOT NULL,
    payload        MEDIUMBLOB NOT NULL,
    received_at    DATETIME(6) NOT NULL DEFAULT CURRENT_TIMESTAMP(6),
    dispatch_state ENUM('pending', 'delivered', 'dead', 'skipped') NOT NULL
                   DEFAULT 'pending',
    dispatch_due_at DATETIME(6) NULL DEFAULT CURRENT_TIMESTAMP(6),
    dispatch_attempts INT UNSIGNED NOT NULL DEFAULT 0,
    dispatch_token BIGINT UNSIGNED NOT NULL DEFAULT 0,
    dispatch_owner VARCHAR(128) NULL,
    dispatch_last_error VARCHAR(255) NULL,
    delivered_at   DATETIME(6) NULL,
    refunded_amount BIGINT UNSIGNED NOT NULL DEFAULT 0,
    dispute_state  ENUM('open', 'won', 'lost') NULL DEFAULT NULL,
    cancelled      TINYINT NOT NULL DEFAULT 0,
    source         ENUM('webhook', 'reconcile', 'replay') NOT NULL
                   DEFAULT 'webhook',
    UNIQUE KEY uq_payments_provider_transaction_id (provider, transaction_id),
    KEY ix_payments_dispatch_due (dispatch_due_at),
    KEY ix_payments_dispatch_state (dispatch_state)
) ENGINE=InnoDB;

-- dispatch_control holds one row (id 1): the pause flag every payhook-dispatch
-- of this database reads before it claims (--pause, --resume), with when and
-- by whom it last changed. No row means not paused.

CREATE TABLE IF NOT EXISTS dispatch_control (
    id TINYINT UNSIGNED NOT NULL PRIMARY KEY,
    paused TINYINT(1) NOT NULL DEFAULT 0,
    changed_at DATETIME(6) NULL,
    changed_by VARCHAR(128) NULL
) ENGINE=InnoDB;

-- payment_events: what happened to a payment's money after it was recorded,
-- one row per lifecycle object: a refund, a dispute (chargeback) or a
-- cancellation (void), identified by (provider, kind, object_id) under the
-- unique key uq_payment_events_object. Several events of the provider may
-- announce one object (one per state change, or the same state twice): they
-- update its one row, which keeps the latest state.
--
-- transaction_id is the payment's id exactly as payments.transaction_id
-- holds it (VARBINARY for the same reason), and may name a payment not
-- recorded yet: providers do not deliver in order. ix_payment_events_payment
-- finds a payment's objects when its totals are computed.
--
-- amount is in minor units (0 when the provider's event carries none),
-- currency NULL when it carries none. occurred_at is the provider's time of
-- the event that set the state (UTC, to the microsecond where the provider
-- gives it): an event older than it changes nothing. payload is the raw body
-- of that event, event_id the provider's id of it (NULL when none);
-- updated_at is when payhook last changed the row.
CREATE TABLE IF NOT EXISTS payment_events (
    id             BIGINT UNSIGNED AUTO_INCREMENT PRIMARY KEY,
    provider       VARCHAR(32) CHARACTER SET ascii COLLATE ascii_bin NOT NULL,
    kind           ENUM('refund', 'dispute', 'cancellation') NOT NULL,
    object_id      VARBINARY(255) NOT NULL,
    transaction_id VARBINARY(128) NOT NULL,
    state          ENUM('pending', 'succeeded', 'failed', 'open', 'won',
                        'lost') NOT NULL,
    amount         BIGINT UNSIGNED NOT NULL DEFAULT 0,
    currency       CHAR(3) CHARACTER SET ascii COLLATE ascii_bin NULL,
    event_id       VARBINARY(255) NULL,
    occurred_at    DATETIME(6) NOT NULL,
    payload        MEDIUMBLOB NOT NULL,
    received_at    DATETIME(6) NOT NULL DEFAULT CURRENT_TIMESTAMP(6),
    updated_at     DATETIME(6) NOT NULL DEFAULT CURRENT_TIMESTAMP(6),
    source         ENUM('webhook', 'reconcile', 'replay') NOT NULL
                   DEFAULT 'webhook',
    UNIQUE KEY uq_payment_events_object (provider, kind, object_id),
    KEY ix_payment_events_payment (provider, transaction_id)
) ENGINE=InnoDB;

-- payment_event_changes: one row per change of a payment_events row (a new
-- object, a new state, or a larger running total), appended in the same
-- transaction as the change; never updated but by the hand-off. Every
-- change is handed on by itself, in order per object, so it carries the
-- dispatch_ columns payments has. n numbers the object's changes to one
-- state (1 the first time; a dispute lost, won, then lost again has its
-- second 'lost' as n = 2): the hand-off's key is
-- payhook:<provider>:<transaction_id>:<kind>:<object_id>:<state>, with
-- :<n> appended from n = 2 on, so no change reuses a key the merchant has
-- accepted. uq_payment_event_changes_state_n keeps that key unique.
--
-- payhook-dispatch hands a change on only after its payment was handed on
-- and after every earlier change of its object (by id): a change that must
-- wait stays pending and is due again later, or at once when the delivery
-- it waits for is recorded. ix_payment_event_changes_object_state finds an
-- object's changes not handed on yet from the index alone;
-- ix_payment_event_changes_state keeps counting dead changes cheap.
CREATE TABLE IF NOT EXISTS payment_event_changes (
    id             BIGINT UNSIGNED AUTO_INCREMENT PRIMARY KEY,
    event_row_id   BIGINT UNSIGNED NOT NULL,
    state          ENUM('pending', 'succeeded', 'failed', 'open', 'won',
                        'lost') NOT NULL,
    n              INT UNSIGNED NOT NULL,
    amount         BIGINT UNSIGNED NOT NULL DEFAULT 0,
    currency       CHAR(3) CHARACTER SET ascii COLLATE ascii_bin NULL,
    event_id       VARBINARY(255) NULL,
    occurred_at    DATETIME(6) NOT NULL,
    received_at    DATETIME(6) NOT NULL DEFAULT CURRENT_TIMESTAMP(6),
    dispatch_state ENUM('pending', 'delivered', 'dead', 'skipped') NOT NULL
                   DEFAULT 'pending',
    dispatch_due_at DATETIME(6) NULL DEFAULT CURRENT_TIMESTAMP(6),
    dispatch_attempts INT UNSIGNED NOT NULL DEFAULT 0,
    dispatch_token BIGINT UNSIGNED NOT NULL DEFAULT 0,
    dispatch_owner VARCHAR(128) NULL,
    dispatch_last_error VARCHAR(255) NULL,
    delivered_at   DATETIME(6) NULL,
    UNIQUE KEY uq_payment_event_changes_state_n (event_row_id, state, n),
    KEY ix_payment_event_changes_dispatch_due (dispatch_due_at),
    KEY ix_payment_event_changes_object_state (event_row_id, dispatch_state),
    KEY ix_payment_event_changes_state (dispatch_state)
) ENGINE=InnoDB;

-- payment_event_items: the signed items each lifecycle object was told by,
-- for a provider that signs only some fields of an event (Adyen signs
-- pspReference, originalReference, merchantAccountCode, merchantReference,
-- value, currency, eventCode and success, not eventDate nor
-- additionalData). item_digest is the SHA-256 of an item's signed fields
-- (its signing string), one row per distinct signed content payhook took
-- into account, written in the transaction that decided on it; the row of
-- the object it told is event_row_id. An item whose digest is here is a
-- duplicate, whatever its unsigned fields say: a signed item resent with a
-- later eventDate, or a CANCEL_OR_REFUND resent with another
-- modification.action, changes nothing.
CREATE TABLE IF NOT EXISTS payment_event_items (
    provider       VARCHAR(32) CHARACTER SET ascii COLLATE ascii_bin NOT NULL,
    item_digest    BINARY(32) NOT NULL,
    event_row_id   BIGINT UNSIGNED NOT NULL,
    received_at    DATETIME(6) NOT NULL DEFAULT CURRENT_TIMESTAMP(6),
    PRIMARY KEY (provider, item_digest)
) ENGINE=InnoDB;

-- dispatch_target: the hand-off target as every payhook-dispatch of this
-- database sees it, one row per target (target: SHA-256 of dispatch_url, or
-- of "command:" and dispatch_command; label: the URL without its query or
-- user, or "dispatch_command"), read and changed in short transactions by
-- every dispatcher and every --once run: the circuit (closed or open, since
-- when), the outage-like failures in a row, the next probe and the probe in
-- hand (its owner and lease: a dispatcher that dies holding it blocks
-- nobody past the lease), a Retry-After pause (since, until), the last
-- answer (HTTP status or 0, error), and the open episode of each alert kind
-- (a dead payment, a long wait). Times are Unix microseconds of the
-- database's clock, 0 for none.
--
-- dispatch_alerts: the alerts decided with a change of dispatch_target, in
-- its transaction (so an episode is alerted once whichever process sees it),
-- then sent by any dispatcher: sent_at marks one sent (kept, as history); a
-- claim (owner, lease) keeps two from sending one at once, and a dispatcher
-- that dies before sending leaves it to the next one once the lease ends.

CREATE TABLE IF NOT EXISTS dispatch_target (
    target         CHAR(64) CHARACTER SET ascii NOT NULL PRIMARY KEY,
    label          VARCHAR(255) NOT NULL DEFAULT '',
    circuit        ENUM('closed', 'open') NOT NULL DEFAULT 'closed',
    since_us       BIGINT NOT NULL DEFAULT 0,
    failures       INT UNSIGNED NOT NULL DEFAULT 0,
    next_probe_us  BIGINT NOT NULL DEFAULT 0,
    probe_owner    VARCHAR(128) NULL,
    probe_until_us BIGINT NOT NULL DEFAULT 0,
    pause_since_us BIGINT NOT NULL DEFAULT 0,
    pause_until_us BIGINT NOT NULL DEFAULT 0,
    last_status    INT NOT NULL DEFAULT 0,
    last_error     VARCHAR(255) NULL,
    last_attempt_us BIGINT NOT NULL DEFAULT 0,
    last_success_us BIGINT NOT NULL DEFAULT 0,
    dead_episode   TINYINT(1) NOT NULL DEFAULT 0,
    waiting_episode TINYINT(1) NOT NULL DEFAULT 0,
    opened_total   BIGINT UNSIGNED NOT NULL DEFAULT 0
) ENGINE=InnoDB;

CREATE TABLE IF NOT EXISTS dispatch_alerts (
    id             BIGINT UNSIGNED AUTO_INCREMENT PRIMARY KEY,
    target         CHAR(64) CHARACTER SET ascii NOT NULL,
    event          VARCHAR(32) NOT NULL,
    row_kind       TINYINT UNSIGNED NOT NULL DEFAULT 0,
    row_id         BIGINT UNSIGNED NOT NULL DEFAULT 0,
    change_label   VARCHAR(600) NOT NULL DEFAULT '',
    provider       VARCHAR(32) NOT NULL DEFAULT '',
    transaction_id VARBINARY(128) NOT NULL DEFAULT '',
    attempts       INT UNSIGNED NOT NULL DEFAULT 0,
    failures       INT UNSIGNED NOT NULL DEFAULT 0,
    detail         VARCHAR(255) NOT NULL DEFAULT '',
    created_at     DATETIME(6) NOT NULL DEFAULT CURRENT_TIMESTAMP(6),
    sent_at        DATETIME(6) NULL,
    claim_owner    VARCHAR(128) NULL,
    claim_until_us BIGINT NOT NULL DEFAULT 0,
    KEY ix_dispatch_alerts_unsent (sent_at, id)
) ENGINE=InnoDB;

-- reconcile_cursors: payhook-reconcile's place in each profile's event list,
-- one row per profile. cursor_at is where the next pass starts (the
-- provider's creation time of the events, UTC; NULL before the first pass,
-- which starts reconcile_lookback_s back); it moves only past events whose
-- rows are committed. last_success_at is the end of the last complete pass,
-- last_error what ended the last failed one (NULL after a complete pass),
-- last_error_at when. lease_owner and lease_until make one pass per profile
-- at a time across hosts: a pass takes the row's lease (until lease_until,
-- by the database's clock) and renews it after every page; another host
-- finds it held and leaves the profile alone until it runs out.
-- recovered_total and discrepancies_total count, over every pass, the rows
-- payhook-reconcile recorded and the discrepancies it found; failed_passes
-- is the failed passes in a row (0 after a complete one). failing_episode
-- and stale_episode are payhook-dispatch's: set in the transaction that
-- queues the alert (3 failed passes in a row; no complete pass for a day),
-- cleared with the alert that a pass completed again, so each is sent once
-- whichever dispatcher sees it (db/migrate-12-reconcile-status.sql).
CREATE TABLE IF NOT EXISTS reconcile_cursors (
    provider       VARCHAR(32) CHARACTER SET ascii COLLATE ascii_bin NOT NULL
                   PRIMARY KEY,
    cursor_at      DATETIME(6) NULL,
    last_success_at DATETIME(6) NULL,
    last_error     VARCHAR(255) NULL,
    last_error_at  DATETIME(6) NULL,
    lease_owner    VARCHAR(128) NULL,
    lease_until    DATETIME(6) NULL,
    updated_at     DATETIME(6) NOT NULL DEFAULT CURRENT_TIMESTAMP(6),
    recovered_total BIGINT UNSIGNED NOT NULL DEFAULT 0,
    discrepancies_total BIGINT UNSIGNED NOT NULL DEFAULT 0,
    failed_passes  INT UNSIGNED NOT NULL DEFAULT 0,
    failing_episode TINYINT(1) NOT NULL DEFAULT 0,
    stale_episode  TINYINT(1) NOT NULL DEFAULT 0
) ENGINE=InnoDB;

-- reconcile_discrepancies: each discrepancy payhook-reconcile found (a
-- listed payment, refund or dispute that payhook holds with another amount
-- or currency), once per (object, listed value): the first pass that sees
-- it logs it, counts it and exits 3; a later pass (the overlap lists it
-- again) only notes when it was seen last. A new listed value is a new
-- discrepancy. Nothing in payments or payment_events is changed for it
-- (db/migrate-14-reconcile-discrepancies.sql).
CREATE TABLE IF NOT EXISTS reconcile_discrepancies (
    id             BIGINT UNSIGNED NOT NULL AUTO_INCREMENT PRIMARY KEY,
    provider       VARCHAR(32) CHARACTER SET ascii COLLATE ascii_bin NOT NULL,
    kind           VARCHAR(16) CHARACTER SET ascii COLLATE ascii_bin NOT NULL,
    object_id      VARBINARY(255) NOT NULL,
    transaction_id VARBINARY(128) NOT NULL,
    listed_amount  BIGINT UNSIGNED NOT NULL,
    listed_currency CHAR(3) CHARACTER SET ascii COLLATE ascii_bin NOT NULL,
    held_amount    BIGINT UNSIGNED NOT NULL,
    held_currency  CHAR(3) CHARACTER SET ascii COLLATE ascii_bin NOT NULL,
    first_seen_at  DATETIME(6) NOT NULL DEFAULT CURRENT_TIMESTAMP(6),
    last_seen_at   DATETIME(6) NOT NULL DEFAULT CURRENT_TIMESTAMP(6),
    seen           INT UNSIGNED NOT NULL DEFAULT 1,
    UNIQUE KEY uq_reconcile_discrepancies (provider, kind, object_id,
        listed_amount, listed_currency)
) ENGINE=InnoDB;

-- inbox: deliveries payhook answered without recording anything, kept while
-- inbox_days is above 0 so payhook-reconcile --replay can put them through
-- the webhook path again once the configuration is fixed. One row per
-- delivery on an enabled profile's path answered 200 ignored or 401:
-- received_at is when it came (a replay judges the signature's timestamp
-- against it), outcome and reason what payhook answered (the last replay's
-- reason after one), signature whether it carried a signature that
-- verified (the ignored ones), one that failed, or none (a full inbox,
-- past inbox_max_bytes, lets the unsigned go first, then the failed, each
-- oldest first: a flood of posts anyone can send never pushes out a signed
-- delivery), headers the profile's signature headers only (a JSON object
-- of name and value; never a cookie, an authorization or a credential: a
-- header that is the secret itself, PAY.JP's X-Payjp-Webhook-Token, is
-- kept as "sha256:" and the hex SHA-256 of it, enough for a replay to
-- tell which configured secret it was), body the raw body, size its bytes
-- (what inbox_max_bytes counts).
CREATE TABLE IF NOT EXISTS inbox (
    id             BIGINT UNSIGNED NOT NULL AUTO_INCREMENT PRIMARY KEY,
    provider       VARCHAR(32) CHARACTER SET ascii COLLATE ascii_bin NOT NULL,
    received_at    DATETIME(6) NOT NULL DEFAULT CURRENT_TIMESTAMP(6),
    outcome        ENUM('ignored', 'unauthorized') NOT NULL,
    signature      ENUM('verified', 'failed', 'missing') NOT NULL DEFAULT 'failed',
    reason         VARCHAR(255) NOT NULL DEFAULT '',
    headers        TEXT NOT NULL,
    body           MEDIUMBLOB NOT NULL,
    size           INT UNSIGNED NOT NULL,
    KEY ix_inbox_received (received_at),
    KEY ix_inbox_signature (signature, id)
) ENGINE=InnoDB;

-- paypal_certs: the certificates PayPal signs its webhooks with, fetched
-- once from a PAYPAL-CERT-URL payhook trusts (https, a host of
-- paypal_cert_hosts) and kept here so that every worker of every host
-- shares one fetch: url the address, pem what it served (the leaf, then
-- its chain), not_after when the chain's first certificate expires,
-- fetched_at when it was kept. A row is judged again whenever a worker
-- reads it (chain, dates, subject): a row is a cache, never a trust.
CREATE TABLE IF NOT EXISTS paypal_certs (
    url            VARCHAR(500) CHARACTER SET ascii COLLATE ascii_bin NOT NULL PRIMARY KEY,
    pem            MEDIUMBLOB NOT NULL,
    not_after      DATETIME NOT NULL,
    fetched_at     DATETIME(6) NOT NULL DEFAULT CURRENT_TIMESTAMP(6)
) ENGINE=InnoDB;

-- notifications: what the providers that only notify (Mollie, Mercado
-- Pago, GoCardless) said changed, queued by the receiver before it answers
-- 200 {"result":"queued"} and fetched from their APIs by payhook-reconcile,
-- which records what the API says. provider and object_id name the object
-- to fetch (a Mollie payment tr_..., a Mercado Pago payment, a GoCardless
-- payment PM... or refund RF...), event_id the provider's event id where
-- it has one (the last one heard), source how it was heard (a delivery, a
-- reconciliation list, a replay of the inbox: what the fetch records is
-- marked so). state: pending until the fetch's rows are committed (done),
-- or the API does not know the id (rejected: a forged or foreign
-- notification, never fetched again). At most one pending row per
-- (provider, object_id): pending_object is object_id while pending, NULL
-- after, and unique. notices counts the notifications a pending row
-- stands for: one that comes while its fetch runs makes the fetch run
-- again (the fetch may have read the object before the change it
-- announces). attempts counts the fetches begun; next_attempt_at is the
-- back-off after a failed one (last_error says why); lease_token and
-- leased_until are the fetcher's who holds it (one fetch of a notification
-- at a time, however many fetchers run). Times are UTC
-- (db/migrate-16-notifications.sql).
CREATE TABLE IF NOT EXISTS notifications (
    id              BIGINT UNSIGNED NOT NULL AUTO_INCREMENT PRIMARY KEY,
    provider        VARCHAR(32) CHARACTER SET ascii COLLATE ascii_bin NOT NULL,
    object_id       VARBINARY(255) NOT NULL,
    event_id        VARBINARY(255) NULL,
    source          ENUM('webhook', 'reconcile', 'replay') NOT NULL DEFAULT 'webhook',
    state           ENUM('pending', 'done', 'rejected') NOT NULL DEFAULT 'pending',
    received_at     DATETIME(6) NOT NULL,
    notices         INT UNSIGNED NOT NULL DEFAULT 1,
    attempts        INT UNSIGNED NOT NULL DEFAULT 0,
    next_attempt_at DATETIME(6) NOT NULL,
    last_error      VARCHAR(255) NULL,
    lease_token     BINARY(16) NULL,
    leased_until    DATETIME(6) NULL,
    updated_at      DATETIME(6) NOT NULL DEFAULT CURRENT_TIMESTAMP(6)
                    ON UPDATE CURRENT_TIMESTAMP(6),
    pending_object  VARBINARY(255) AS (IF(state = 'pending', object_id, NULL)) STORED,
    UNIQUE KEY uq_notifications_pending (provider, pending_object),
    KEY ix_notifications_due (state, next_attempt_at),
    KEY ix_notifications_object (provider, object_id)
) ENGINE=InnoDB;

-- notification_episodes: payhook-dispatch's notify_waiting alert episodes,
-- one row per provider: waiting is set in the transaction that queues the
-- alert (a notification pending longer than notify_alert_after_s) and
-- cleared once none is, so each episode alerts once whichever dispatcher
-- sees it.
CREATE TABLE IF NOT EXISTS notification_episodes (
    provider       VARCHAR(32) CHARACTER SET ascii COLLATE ascii_bin NOT NULL
                   PRIMARY KEY,
    waiting        TINYINT(1) NOT NULL DEFAULT 0,
    updated_at     DATETIME(6) NOT NULL DEFAULT CURRENT_TIMESTAMP(6)
                   ON UPDATE CURRENT_TIMESTAMP(6)
) ENGINE=InnoDB;
