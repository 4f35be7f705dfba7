-- payhook: adds table paypal_certs, where the workers of every host share
-- the certificates PayPal signs its webhooks with (one fetch for all).
--
--     mariadb DBNAME < db/migrate-15-paypal-certs.sql
--
-- A new table, needed only with the paypal profile. Until it exists each
-- worker fetches PayPal's certificate for itself, keeps it in its memory,
-- and says once a minute why it cannot share it; payhook --check-config
-- fails, naming this file. Its user needs:
--
--     GRANT SELECT, INSERT, UPDATE ON payhook.paypal_certs TO ...

CREATE TABLE IF NOT EXISTS paypal_certs (
    url            VARCHAR(500) CHARACTER SET ascii COLLATE ascii_bin NOT NULL PRIMARY KEY,
    pem            MEDIUMBLOB NOT NULL,
    not_after      DATETIME NOT NULL,
    fetched_at     DATETIME(6) NOT NULL DEFAULT CURRENT_TIMESTAMP(6)
) ENGINE=InnoDB;
