-- +goose Up
-- The web console: operators (is_admin), sign-in by password (argon2id,
-- PHC string; empty = none set), sessions stored hashed so that they
-- survive restarts and work across processes, the recent posts of each
-- webhook, and the message chain of the log.
ALTER TABLE accounts ADD COLUMN is_admin INTEGER NOT NULL DEFAULT 0;
ALTER TABLE accounts ADD COLUMN password_hash TEXT NOT NULL DEFAULT '';

CREATE TABLE sessions (
    id_hash      TEXT    PRIMARY KEY, -- hex SHA-256 of the cookie's value
    account_id   INTEGER NOT NULL REFERENCES accounts (id) ON DELETE CASCADE,
    key_id       INTEGER REFERENCES api_keys (id) ON DELETE CASCADE, -- signed in with this key; NULL: password
    csrf         TEXT    NOT NULL,
    created_at   INTEGER NOT NULL,
    last_seen_at INTEGER NOT NULL
);
CREATE INDEX sessions_account ON sessions (account_id);
CREATE INDEX sessions_seen ON sessions (last_seen_at);

CREATE TABLE webhook_posts (
    id          INTEGER PRIMARY KEY AUTOINCREMENT,
    webhook_id  INTEGER NOT NULL REFERENCES webhooks (id) ON DELETE CASCADE,
    created_at  INTEGER NOT NULL,
    status      INTEGER NOT NULL DEFAULT 0, -- HTTP status; 0 when no answer
    error       TEXT    NOT NULL DEFAULT '',
    entries     INTEGER NOT NULL,
    duration_ms INTEGER NOT NULL
);
CREATE INDEX webhook_posts_webhook ON webhook_posts (webhook_id, id);

CREATE INDEX events_message ON events (domain_id, message_id);
