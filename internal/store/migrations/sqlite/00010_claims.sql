-- +goose NO TRANSACTION
-- +goose Up
-- Domain claims (issue 14): an unverified domain reserves nothing. Several
-- accounts may hold a claim on one name; the first to verify owns it and
-- the others' claims end. The name is unique among verified domains only,
-- and once per account.
--
-- SQLite cannot drop the column's UNIQUE constraint, so the table is
-- rebuilt (https://www.sqlite.org/lang_altertable.html#otheralter). Foreign
-- keys are off meanwhile: every table referencing domains cascades on
-- delete, and dropping the old table must not empty them. This runs
-- outside a transaction because the pragma has no effect inside one; the
-- rebuild itself is one transaction.
PRAGMA foreign_keys = OFF;
BEGIN IMMEDIATE;
CREATE TABLE domains_new (
    id                INTEGER PRIMARY KEY AUTOINCREMENT,
    account_id        INTEGER NOT NULL REFERENCES accounts (id),
    name              TEXT    NOT NULL,
    created_at        INTEGER NOT NULL,
    verified_at       INTEGER,
    dkim_selector     TEXT    NOT NULL,
    dkim_key          TEXT    NOT NULL, -- sealed PKCS#8
    dkim_public       TEXT    NOT NULL,
    delivery_mode     TEXT    NOT NULL,
    smtp_host         TEXT    NOT NULL DEFAULT '',
    smtp_port         INTEGER NOT NULL DEFAULT 0,
    smtp_user         TEXT    NOT NULL DEFAULT '',
    smtp_password     TEXT    NOT NULL DEFAULT '', -- sealed
    smtp_tls          TEXT    NOT NULL DEFAULT '',
    tracking_domain   TEXT    NOT NULL DEFAULT '',
    auth_domain       TEXT    NOT NULL DEFAULT '',
    track_opens       INTEGER NOT NULL DEFAULT 0,
    track_clicks      INTEGER NOT NULL DEFAULT 0,
    track_unsubscribe INTEGER NOT NULL DEFAULT 0,
    -- When an unverified claim lapses (NULL while verified).
    claim_expires_at  INTEGER,
    -- Why the claim ended ('' while it stands): another account verified the name.
    claim_ended       TEXT    NOT NULL DEFAULT ''
);
INSERT INTO domains_new (id, account_id, name, created_at, verified_at, dkim_selector, dkim_key, dkim_public,
    delivery_mode, smtp_host, smtp_port, smtp_user, smtp_password, smtp_tls, tracking_domain, auth_domain,
    track_opens, track_clicks, track_unsubscribe, claim_expires_at)
SELECT id, account_id, name, created_at, verified_at, dkim_selector, dkim_key, dkim_public,
    delivery_mode, smtp_host, smtp_port, smtp_user, smtp_password, smtp_tls, tracking_domain, auth_domain,
    track_opens, track_clicks, track_unsubscribe,
    -- Claims standing at the upgrade get the default 72 hours from now.
    CASE WHEN verified_at IS NULL THEN CAST(strftime('%s', 'now') AS INTEGER) * 1000 + 259200000 END
FROM domains;
DROP TABLE domains;
ALTER TABLE domains_new RENAME TO domains;
CREATE UNIQUE INDEX domains_account ON domains (account_id, name);
CREATE UNIQUE INDEX domains_verified_name ON domains (name) WHERE verified_at IS NOT NULL;
CREATE UNIQUE INDEX domains_verified_tracking ON domains (tracking_domain) WHERE verified_at IS NOT NULL AND tracking_domain <> '';
CREATE UNIQUE INDEX domains_verified_auth ON domains (auth_domain) WHERE verified_at IS NOT NULL AND auth_domain <> '';
CREATE INDEX domains_name ON domains (name);
CREATE INDEX domains_tracking_domain ON domains (tracking_domain) WHERE tracking_domain <> '';
CREATE INDEX domains_claim_expires ON domains (claim_expires_at) WHERE claim_expires_at IS NOT NULL;
PRAGMA foreign_key_check;
COMMIT;
PRAGMA foreign_keys = ON;

-- A complaint about a delivery is logged once, like its unsubscribe
-- (unsubscribed_at): repeats are answered but not logged again.
ALTER TABLE deliveries ADD COLUMN complained_at INTEGER;
