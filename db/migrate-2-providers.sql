-- payhook: migrates a payments table of payhook 0.1 (one provider, unique key
-- uq_payments_transaction_id) to the table of several providers: the columns
-- provider and event_id, and the unique key on (provider, transaction_id).
-- Existing rows become provider 'standard', which is what they were.
--
--     mariadb DBNAME < db/migrate-2-providers.sql
--
-- One ALTER TABLE, so the old key is never dropped without the new one in
-- place. Run it once; a second run fails harmlessly on the columns that
-- already exist. Workers of the old version still record new transactions
-- on the migrated table, but no longer recognise a redelivery (they look for
-- the old key's name) and answer it 503, which the provider retries: replace
-- them with the new version right after the migration.

ALTER TABLE payments
    ADD COLUMN provider VARCHAR(32) CHARACTER SET ascii COLLATE ascii_bin
        NOT NULL DEFAULT 'standard' AFTER id,
    ADD COLUMN event_id VARBINARY(255) NULL AFTER transaction_id,
    DROP INDEX uq_payments_transaction_id,
    ADD UNIQUE KEY uq_payments_provider_transaction_id (provider, transaction_id);
