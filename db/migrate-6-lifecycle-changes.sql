-- payhook: adds the history of every change of a refund, dispute or
-- cancellation (payment_event_changes) to a database that has
-- payment_events (db/migrate-4-lifecycle.sql first if not), as
-- db/schema.sql creates it.
--
--     mariadb DBNAME < db/migrate-6-lifecycle-changes.sql
--
-- The version of payhook that records lifecycle events writes to this
-- table: run this before upgrading (payhook --check-config names it when
-- it is missing). It creates a table and changes none.

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
    KEY ix_payment_event_changes_dispatch_due (dispatch_due_at)
) ENGINE=InnoDB;
