-- payhook: the payments table, one row per transaction recorded exactly once.
-- Load it into the database you chose (this file creates no database):
--     mariadb DBNAME < db/schema.sql        (or: mysql DBNAME < db/schema.sql)
-- It is idempotent: loading it again changes nothing.
--
-- transaction_id is VARBINARY, so it is compared byte for byte: 'abc', 'ABC'
-- and 'abc ' are three different ids. A VARCHAR with the usual case-insensitive
-- collation (utf8mb4_general_ci, latin1_swedish_ci) would treat 'abc' and 'ABC'
-- as equal, and a PAD SPACE collation would treat 'abc' and 'abc ' as equal:
-- the unique key would then turn a genuine new transaction into a "duplicate".
-- The unique key's name, uq_payments_transaction_id, is part of the contract:
-- payhook reads it in the 1062 (ER_DUP_ENTRY) message to know that a duplicate
-- means "already recorded".
--
-- received_at is DATETIME (not TIMESTAMP, which ends in 2038), in the
-- server's time zone.
--
-- payload holds the raw request body; MEDIUMBLOB (up to 16 MiB) because a BLOB
-- stops at 65535 bytes, one byte short of the default max_body_bytes.

CREATE TABLE IF NOT EXISTS payments (
    id             BIGINT UNSIGNED AUTO_INCREMENT PRIMARY KEY,
    transaction_id VARBINARY(128) NOT NULL,
    amount         BIGINT UNSIGNED NOT NULL,
    currency       CHAR(3) CHARACTER SET ascii COLLATE ascii_bin NOT NULL,
    payload        MEDIUMBLOB NOT NULL,
    received_at    DATETIME(6) NOT NULL DEFAULT CURRENT_TIMESTAMP(6),
    UNIQUE KEY uq_payments_transaction_id (transaction_id)
) ENGINE=InnoDB;
