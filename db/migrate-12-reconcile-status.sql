-- payhook: adds to reconcile_cursors (db/migrate-10-reconcile.sql) what the
-- operators' figures and alerts need: rows recorded by payhook-reconcile
-- and discrepancies found, counted by every pass; failed passes in a row
-- (0 after a complete pass); and the alert episodes payhook-dispatch opened
-- (a pass that keeps failing, a last complete pass older than a day), so
-- that each alert is sent once however many dispatchers watch.
--
--     mariadb DBNAME < db/migrate-12-reconcile-status.sql
--
-- Columns with defaults: an online change on InnoDB. payhook-reconcile of
-- before goes on writing the columns it knows; until this is applied, the
-- new one says so in its log and payhook-dispatch shows no reconciliation.

ALTER TABLE reconcile_cursors
    ADD COLUMN recovered_total BIGINT UNSIGNED NOT NULL DEFAULT 0,
    ADD COLUMN discrepancies_total BIGINT UNSIGNED NOT NULL DEFAULT 0,
    ADD COLUMN failed_passes INT UNSIGNED NOT NULL DEFAULT 0,
    ADD COLUMN failing_episode TINYINT(1) NOT NULL DEFAULT 0,
    ADD COLUMN stale_episode TINYINT(1) NOT NULL DEFAULT 0;
