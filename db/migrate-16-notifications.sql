-- payhook: adds table notifications, the queue of what the providers that
-- only notify (Mollie, Mercado Pago, GoCardless) said changed, which
-- payhook-reconcile fetches from their APIs, and notification_episodes,
-- where payhook-dispatch marks its notify_waiting alerts.
--
--     mariadb DBNAME < db/migrate-16-notifications.sql
--
-- New tables, needed only with the mollie, mercadopago or gocardless
-- profiles: until they exist a notification of theirs is answered 503
-- (the provider retries) and payhook-dispatch shows no queue. The users
-- need:
--
--     GRANT SELECT, INSERT, UPDATE ON payhook.notifications TO ...   (payhook)
--     GRANT SELECT, INSERT, UPDATE, DELETE ON payhook.notifications TO ...
--                                                      (payhook-reconcile)
--     GRANT SELECT ON payhook.notifications TO ...       (payhook-dispatch)
--     GRANT SELECT, INSERT, UPDATE ON payhook.notification_episodes TO ...
--                                                      (payhook-dispatch)

CREATE TABLE IF NOT EXISTS notifications (
    id              BIGINT UNSIGNED NOT NULL AUTO_INCREMENT PRIMARY KEY,
    provider        VARCHAR(32) CHARACTER SET ascii COLLATE ascii_bin NOT NULL,
    object_id       VARBINARY(255) NOT NULL,
    event_id        VARBINARY(255) NULL,
    source          ENUM('webhook', 'reconcile', 'replay') NOT NULL DEFAULT 'webhook',
    state           ENUM('pending', 'done', 'rejected') NOT NULL DEFAULT 'pending',
    received_at     DATETIME(6) NOT NULL,
    notices         INT UNSIGNED NOT NULL DEFAULT 1,
    attempts        INT UNSIGNED NOT NULL DEFAULT 0,
    next_attempt_at DATETIME(6) NOT NULL,
    last_error      VARCHAR(255) NULL,
    lease_token     BINARY(16) NULL,
    leased_until    DATETIME(6) NULL,
    updated_at      DATETIME(6) NOT NULL DEFAULT CURRENT_TIMESTAMP(6)
                    ON UPDATE CURRENT_TIMESTAMP(6),
    pending_object  VARBINARY(255) AS (IF(state = 'pending', object_id, NULL)) STORED,
    UNIQUE KEY uq_notifications_pending (provider, pending_object),
    KEY ix_notifications_due (state, next_attempt_at),
    KEY ix_notifications_object (provider, object_id)
) ENGINE=InnoDB;

CREATE TABLE IF NOT EXISTS notification_episodes (
    provider       VARCHAR(32) CHARACTER SET ascii COLLATE ascii_bin NOT NULL
                   PRIMARY KEY,
    waiting        TINYINT(1) NOT NULL DEFAULT 0,
    updated_at     DATETIME(6) NOT NULL DEFAULT CURRENT_TIMESTAMP(6)
                   ON UPDATE CURRENT_TIMESTAMP(6)
) ENGINE=InnoDB;
