-- payhook: brings table inbox (db/migrate-11-inbox.sql) to this version:
--   * column signature: whether a kept delivery carried a signature that
--     verified, one that failed, or none. A full inbox (inbox_max_bytes)
--     lets the unsigned go first, then the failed, so a flood of posts
--     anyone can send never pushes out a signed delivery. Rows of before
--     are 'verified' when ignored, else 'failed' (which of the 401s carried
--     no signature is not known).
--   * PAY.JP's X-Payjp-Webhook-Token is the secret itself: the inbox keeps
--     only "sha256:" and the hex SHA-256 of it, enough for a replay to tell
--     which configured secret it matches. Rows of before held the token:
--     it is replaced by its digest here.
--
--     mariadb DBNAME < db/migrate-13-inbox-signature.sql
--
-- Run it once the new payhook is installed (its workers write the new
-- column; a worker of before still writing leaves its rows 'failed' and,
-- for PAY.JP, the token, which running this file again replaces). Until
-- it runs, the new workers' inbox writes fail and are counted (payhook
-- --check-config names this file); payments are not touched.

ALTER TABLE inbox
    ADD COLUMN IF NOT EXISTS signature ENUM('verified', 'failed', 'missing')
        NOT NULL DEFAULT 'failed' AFTER outcome,
    ADD KEY IF NOT EXISTS ix_inbox_signature (signature, id);

UPDATE inbox SET signature = 'verified' WHERE outcome = 'ignored';

UPDATE inbox
SET headers = JSON_SET(headers, '$.HTTP_X_PAYJP_WEBHOOK_TOKEN',
        CONCAT('sha256:', SHA2(JSON_VALUE(headers,
            '$.HTTP_X_PAYJP_WEBHOOK_TOKEN'), 256)))
WHERE provider = 'payjp'
    AND JSON_VALUE(headers, '$.HTTP_X_PAYJP_WEBHOOK_TOKEN') IS NOT NULL
    AND JSON_VALUE(headers, '$.HTTP_X_PAYJP_WEBHOOK_TOKEN') NOT LIKE 'sha256:%';
