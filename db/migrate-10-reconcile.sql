-- payhook: adds what payhook-reconcile needs to a database of before: the
-- source column of payments and payment_events ('webhook', 'reconcile' or
-- 'replay': how the row came; every row of before came by webhook) and the
-- reconcile_cursors table (one row per profile: where the next pass starts,
-- the last complete pass, the last error, the one-pass-at-a-time lease).
--
--     mariadb DBNAME < db/migrate-10-reconcile.sql
--
-- Adding a column with a default is an online change on InnoDB (MariaDB
-- 10.3+ adds it instantly); payhook's workers keep running, and write the
-- default until they are upgraded.

ALTER TABLE payments
    ADD COLUMN source ENUM('webhook', 'reconcile', 'replay') NOT NULL
        DEFAULT 'webhook';

ALTER TABLE payment_events
    ADD COLUMN source ENUM('webhook', 'reconcile', 'replay') NOT NULL
        DEFAULT 'webhook';

CREATE TABLE IF NOT EXISTS reconcile_cursors (
    provider       VARCHAR(32) CHARACTER SET ascii COLLATE ascii_bin NOT NULL
                   PRIMARY KEY,
    cursor_at      DATETIME(6) NULL,
    last_success_at DATETIME(6) NULL,
    last_error     VARCHAR(255) NULL,
    last_error_at  DATETIME(6) NULL,
    lease_owner    VARCHAR(128) NULL,
    lease_until    DATETIME(6) NULL,
    updated_at     DATETIME(6) NOT NULL DEFAULT CURRENT_TIMESTAMP(6)
) ENGINE=InnoDB;
