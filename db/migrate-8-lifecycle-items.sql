-- payhook: adds payment_event_items, the signed items each refund, dispute
-- or cancellation was told by (Adyen signs only some fields of an item), to
-- a database that has payment_events (db/migrate-4-lifecycle.sql first if
-- not), as db/schema.sql creates it.
--
--     mariadb DBNAME < db/migrate-8-lifecycle-items.sql
--
-- The version of payhook that records Adyen's lifecycle items writes to
-- this table: run this before upgrading (payhook --check-config names it
-- when it is missing). It creates a table and changes none.

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
