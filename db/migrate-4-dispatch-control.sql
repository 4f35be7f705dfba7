-- payhook: adds dispatch_control, the pause flag every payhook-dispatch of
-- the database reads before it claims (payhook-dispatch --pause, --resume).
--
--     mariadb DBNAME < db/migrate-4-dispatch-control.sql
--
-- Without the table the dispatchers run as before (never paused) and --pause
-- says to run this file. payhook's workers never read it.

CREATE TABLE IF NOT EXISTS dispatch_control (
    id TINYINT UNSIGNED NOT NULL PRIMARY KEY,
    paused TINYINT(1) NOT NULL DEFAULT 0,
    changed_at DATETIME(6) NULL,
    changed_by VARCHAR(128) NULL
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4;
