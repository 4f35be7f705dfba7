-- payhook: adds table reconcile_discrepancies, so that payhook-reconcile
-- reports a discrepancy (a listed payment, refund or dispute that payhook
-- holds with another amount or currency) once per object and listed value,
-- not at every pass whose overlap lists it again: one line, one count in
-- discrepancies_total, one exit status 3 for cron.
--
--     mariadb DBNAME < db/migrate-14-reconcile-discrepancies.sql
--
-- A new table. Until it exists, payhook-reconcile reports a discrepancy at
-- every pass that sees it, as before, and says once why. Its user needs:
--
--     GRANT SELECT, INSERT, UPDATE ON payhook.reconcile_discrepancies TO ...

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
