-- payhook: adds the inbox table to a database of before: the deliveries
-- payhook answered 200 ignored or 401 on an enabled profile's path, kept
-- while inbox_days is above 0 for payhook-reconcile --replay.
--
--     mariadb DBNAME < db/migrate-11-inbox.sql
--
-- A new table: payhook's workers keep running; they keep nothing until
-- inbox_days is set and the table exists.

CREATE TABLE IF NOT EXISTS inbox (
    id             BIGINT UNSIGNED NOT NULL AUTO_INCREMENT PRIMARY KEY,
    provider       VARCHAR(32) CHARACTER SET ascii COLLATE ascii_bin NOT NULL,
    received_at    DATETIME(6) NOT NULL DEFAULT CURRENT_TIMESTAMP(6),
    outcome        ENUM('ignored', 'unauthorized') NOT NULL,
    reason         VARCHAR(255) NOT NULL DEFAULT '',
    headers        TEXT NOT NULL,
    body           MEDIUMBLOB NOT NULL,
    size           INT UNSIGNED NOT NULL,
    KEY ix_inbox_received (received_at)
) ENGINE=InnoDB;
