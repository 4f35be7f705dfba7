-- payhook: adds the hand-off columns of payhook-dispatch to a payments table
-- that has the providers' columns (db/migrate-2-providers.sql first if not).
--
--     mariadb DBNAME < db/migrate-3-dispatch.sql
--
-- Rows already in the table are marked 'skipped': they were recorded before
-- there was a hand-off, and whatever handled them then should not see them
-- twice. To hand them off too, after the migration:
--
--     UPDATE payments SET dispatch_state = 'pending',
--            dispatch_due_at = UTC_TIMESTAMP(6) WHERE dispatch_state = 'skipped';
--
-- The first statement adds the columns with the defaults that mark old rows
-- skipped; the second sets the defaults new rows get (pending, due at once).
-- A row recorded in the instant between the two is skipped as well: run the
-- UPDATE above with "AND received_at >= <the time of the migration>" to hand
-- such rows off. payhook's workers keep running throughout (they do not name
-- these columns).

ALTER TABLE payments
    ADD COLUMN dispatch_state ENUM('pending', 'delivered', 'dead', 'skipped')
        NOT NULL DEFAULT 'skipped',
    ADD COLUMN dispatch_due_at DATETIME(6) NULL DEFAULT NULL,
    ADD COLUMN dispatch_attempts INT UNSIGNED NOT NULL DEFAULT 0,
    ADD COLUMN dispatch_token BIGINT UNSIGNED NOT NULL DEFAULT 0,
    ADD COLUMN dispatch_owner VARCHAR(128) NULL,
    ADD COLUMN dispatch_last_error VARCHAR(255) NULL,
    ADD COLUMN delivered_at DATETIME(6) NULL,
    ADD KEY ix_payments_dispatch_due (dispatch_due_at);

ALTER TABLE payments
    ALTER COLUMN dispatch_state SET DEFAULT 'pending',
    MODIFY COLUMN dispatch_due_at DATETIME(6) NULL DEFAULT CURRENT_TIMESTAMP(6);
