-- payhook: adds dispatch_target and dispatch_alerts: the hand-off target's
-- state (its circuit, a Retry-After pause, the failures in a row, the last
-- error and HTTP status) and its alerts, shared by every payhook-dispatch of
-- the database, so that the outage rule and the alerts hold across
-- processes, hosts and --once runs from cron.
--
--     mariadb DBNAME < db/migrate-9-dispatch-target.sql
--
-- Without them each payhook-dispatch keeps its own view of the target, as
-- before (--check-config warns, and names this file). Both tables are new and
-- small: payhook's workers and the dispatchers keep running.

-- dispatch_target: the hand-off target as every payhook-dispatch of this
-- database sees it, one row per target (target: SHA-256 of dispatch_url, or
-- of "command:" and dispatch_command; label: the URL without its query or
-- user, or "dispatch_command"), read and changed in short transactions by
-- every dispatcher and every --once run: the circuit (closed or open, since
-- when), the outage-like failures in a row, the next probe and the probe in
-- hand (its owner and lease: a dispatcher that dies holding it blocks
-- nobody past the lease), a Retry-After pause (since, until), the last
-- answer (HTTP status or 0, error), and the open episode of each alert kind
-- (a dead payment, a long wait). Times are Unix microseconds of the
-- database's clock, 0 for none.
--
-- dispatch_alerts: the alerts decided with a change of dispatch_target, in
-- its transaction (so an episode is alerted once whichever process sees it),
-- then sent by any dispatcher: sent_at marks one sent (kept, as history); a
-- claim (owner, lease) keeps two from sending one at once, and a dispatcher
-- that dies before sending leaves it to the next one once the lease ends.

CREATE TABLE IF NOT EXISTS dispatch_target (
    target         CHAR(64) CHARACTER SET ascii NOT NULL PRIMARY KEY,
    label          VARCHAR(255) NOT NULL DEFAULT '',
    circuit        ENUM('closed', 'open') NOT NULL DEFAULT 'closed',
    since_us       BIGINT NOT NULL DEFAULT 0,
    failures       INT UNSIGNED NOT NULL DEFAULT 0,
    next_probe_us  BIGINT NOT NULL DEFAULT 0,
    probe_owner    VARCHAR(128) NULL,
    probe_until_us BIGINT NOT NULL DEFAULT 0,
    pause_since_us BIGINT NOT NULL DEFAULT 0,
    pause_until_us BIGINT NOT NULL DEFAULT 0,
    last_status    INT NOT NULL DEFAULT 0,
    last_error     VARCHAR(255) NULL,
    last_attempt_us BIGINT NOT NULL DEFAULT 0,
    last_success_us BIGINT NOT NULL DEFAULT 0,
    dead_episode   TINYINT(1) NOT NULL DEFAULT 0,
    waiting_episode TINYINT(1) NOT NULL DEFAULT 0,
    opened_total   BIGINT UNSIGNED NOT NULL DEFAULT 0
) ENGINE=InnoDB;

CREATE TABLE IF NOT EXISTS dispatch_alerts (
    id             BIGINT UNSIGNED AUTO_INCREMENT PRIMARY KEY,
    target         CHAR(64) CHARACTER SET ascii NOT NULL,
    event          VARCHAR(32) NOT NULL,
    row_kind       TINYINT UNSIGNED NOT NULL DEFAULT 0,
    row_id         BIGINT UNSIGNED NOT NULL DEFAULT 0,
    change_label   VARCHAR(600) NOT NULL DEFAULT '',
    provider       VARCHAR(32) NOT NULL DEFAULT '',
    transaction_id VARBINARY(128) NOT NULL DEFAULT '',
    attempts       INT UNSIGNED NOT NULL DEFAULT 0,
    failures       INT UNSIGNED NOT NULL DEFAULT 0,
    detail         VARCHAR(255) NOT NULL DEFAULT '',
    created_at     DATETIME(6) NOT NULL DEFAULT CURRENT_TIMESTAMP(6),
    sent_at        DATETIME(6) NULL,
    claim_owner    VARCHAR(128) NULL,
    claim_until_us BIGINT NOT NULL DEFAULT 0,
    KEY ix_dispatch_alerts_unsent (sent_at, id)
) ENGINE=InnoDB;
