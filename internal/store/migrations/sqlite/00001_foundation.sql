-- +goose Up
-- Timestamps are Unix milliseconds (BIGINT) in both dialects.
CREATE TABLE accounts (
    id          INTEGER PRIMARY KEY AUTOINCREMENT,
    login       TEXT    NOT NULL UNIQUE,
    created_at  INTEGER NOT NULL,
    disabled_at INTEGER
);

CREATE TABLE api_keys (
    id           INTEGER PRIMARY KEY AUTOINCREMENT,
    account_id   INTEGER NOT NULL REFERENCES accounts (id) ON DELETE CASCADE,
    name         TEXT    NOT NULL DEFAULT '',
    prefix       TEXT    NOT NULL,
    hash         TEXT    NOT NULL UNIQUE, -- hex SHA-256 of the key: the lookup path
    created_at   INTEGER NOT NULL,
    last_used_at INTEGER,
    revoked_at   INTEGER
);
CREATE INDEX api_keys_account ON api_keys (account_id);

CREATE TABLE domains (
    id              INTEGER PRIMARY KEY AUTOINCREMENT,
    account_id      INTEGER NOT NULL REFERENCES accounts (id),
    name            TEXT    NOT NULL UNIQUE,
    created_at      INTEGER NOT NULL,
    verified_at     INTEGER,
    dkim_selector   TEXT    NOT NULL,
    dkim_key        TEXT    NOT NULL, -- sealed PKCS#8
    dkim_public     TEXT    NOT NULL,
    delivery_mode   TEXT    NOT NULL,
    smtp_host       TEXT    NOT NULL DEFAULT '',
    smtp_port       INTEGER NOT NULL DEFAULT 0,
    smtp_user       TEXT    NOT NULL DEFAULT '',
    smtp_password   TEXT    NOT NULL DEFAULT '', -- sealed
    smtp_tls        TEXT    NOT NULL DEFAULT '',
    tracking_domain TEXT    NOT NULL DEFAULT '',
    auth_domain     TEXT    NOT NULL DEFAULT ''
);
CREATE INDEX domains_account ON domains (account_id, name);

-- Fixed-window rate-limit counters shared by processes.
CREATE TABLE rate_counters (
    key          TEXT    NOT NULL,
    window_start INTEGER NOT NULL,
    count        INTEGER NOT NULL,
    PRIMARY KEY (key, window_start)
);
