-- payhook: adds refunds, disputes and cancellations to a database whose
-- payments table has the hand-off columns (db/migrate-3-dispatch.sql first if
-- not): the payments columns refunded_amount, dispute_state and cancelled,
-- and the table payment_events, as db/schema.sql creates them.
--
--     mariadb DBNAME < db/migrate-4-lifecycle.sql
--
-- Existing payments get the totals of a payment with no refund, dispute or
-- cancellation (0, NULL, 0), which is what payhook knew of them. payhook's
-- workers keep running throughout: they do not name these columns until the
-- version that records lifecycle events, which needs this migration first.
-- The ALTER of a large payments table rebuilds it (MariaDB 10.3+ and MySQL
-- 8.0 add the columns in place, ALGORITHM=INSTANT, where they can).

ALTER TABLE payments
    ADD COLUMN refunded_amount BIGINT UNSIGNED NOT NULL DEFAULT 0,
    ADD COLUMN dispute_state ENUM('open', 'won', 'lost') NULL DEFAULT NULL,
    ADD COLUMN cancelled TINYINT NOT NULL DEFAULT 0;

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
    UNIQUE KEY uq_payment_events_object (provider, kind, object_id),
    KEY ix_payment_events_payment (provider, transaction_id)
) ENGINE=InnoDB;
