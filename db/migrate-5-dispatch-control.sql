-- payhook: adds dispatch_control, the pause flag every payhook-dispatch of
-- the database reads before it claims (payhook-dispatch --pause, --resume),
-- and ix_payments_dispatch_state, which keeps the metrics' count of dead
-- payments and --requeue from reading the whole table.
--
--     mariadb DBNAME < db/migrate-5-dispatch-control.sql
--
-- Without the table the dispatchers run as before (never paused) and --pause
-- says to run this file. payhook's workers never read it. The index is built
-- online (InnoDB) but reads the whole table once: on millions of rows, run it
-- at a quiet hour.

CREATE TABLE IF NOT EXISTS dispatch_control (
    id TINYINT UNSIGNED NOT NULL PRIMARY KEY,
    paused TINYINT(1) NOT NULL DEFAULT 0,
    changed_at DATETIME(6) NULL,
    changed_by VARCHAR(128) NULL
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4;

ALTER TABLE payments ADD KEY ix_payments_dispatch_state (dispatch_state);
