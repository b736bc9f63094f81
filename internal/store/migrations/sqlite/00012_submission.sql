-- +goose NO TRANSACTION
-- +goose Up
-- SMTP submission (issue 15): a message submitted over SMTP is kept as the
-- client sent it (sends.raw) and every recipient's copy carries the
-- client's Message-ID, so deliveries.message_id (what the log shows) is
-- no longer unique per delivery; the delivery's own id stays the key.
--
-- SQLite cannot drop the column's UNIQUE constraint: the table is rebuilt
-- (no table references deliveries, so no cascade can fire; foreign keys
-- are off during the swap all the same, and checked after it).
PRAGMA foreign_keys = OFF;
BEGIN IMMEDIATE;
ALTER TABLE sends ADD COLUMN raw BLOB NOT NULL DEFAULT x'';
CREATE TABLE deliveries_new (
    id              INTEGER PRIMARY KEY AUTOINCREMENT,
    send_id         INTEGER NOT NULL REFERENCES sends (id) ON DELETE CASCADE,
    domain_id       INTEGER NOT NULL,
    message_id      TEXT    NOT NULL,
    recipient       TEXT    NOT NULL,
    state           TEXT    NOT NULL, -- pending | sending | deferred | delivered | failed | bounced
    attempts        INTEGER NOT NULL DEFAULT 0,
    next_attempt_at INTEGER NOT NULL,
    lease_owner     TEXT,
    lease_until     INTEGER,
    last_code       INTEGER,
    last_message    TEXT,
    created_at      INTEGER NOT NULL,
    updated_at      INTEGER NOT NULL,
    opened_at       INTEGER,
    clicked_at      INTEGER,
    unsubscribed_at INTEGER,
    complained_at   INTEGER
);
INSERT INTO deliveries_new (id, send_id, domain_id, message_id, recipient, state, attempts, next_attempt_at,
    lease_owner, lease_until, last_code, last_message, created_at, updated_at, opened_at, clicked_at,
    unsubscribed_at, complained_at)
SELECT id, send_id, domain_id, message_id, recipient, state, attempts, next_attempt_at,
    lease_owner, lease_until, last_code, last_message, created_at, updated_at, opened_at, clicked_at,
    unsubscribed_at, complained_at
FROM deliveries;
DROP TABLE deliveries;
ALTER TABLE deliveries_new RENAME TO deliveries;
CREATE INDEX deliveries_due ON deliveries (next_attempt_at) WHERE state IN ('pending', 'deferred');
CREATE INDEX deliveries_leased ON deliveries (lease_until) WHERE state = 'sending';
CREATE INDEX deliveries_send ON deliveries (send_id);
CREATE INDEX deliveries_message ON deliveries (message_id);
PRAGMA foreign_key_check;
COMMIT;
PRAGMA foreign_keys = ON;
