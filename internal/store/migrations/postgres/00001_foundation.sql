-- +goose Up
-- Timestamps are Unix milliseconds (BIGINT) in both dialects.
CREATE TABLE accounts (
    id          BIGSERIAL PRIMARY KEY,
    login       TEXT   NOT NULL UNIQUE,
    created_at  BIGINT NOT NULL,
    disabled_at BIGINT
);

CREATE TABLE api_keys (
    id           BIGSERIAL PRIMARY KEY,
    account_id   BIGINT NOT NULL REFERENCES accounts (id) ON DELETE CASCADE,
    name         TEXT   NOT NULL DEFAULT '',
    prefix       TEXT   NOT NULL,
    hash         TEXT   NOT NULL UNIQUE, -- hex SHA-256 of the key: the lookup path
    created_at   BIGINT NOT NULL,
    last_used_at BIGINT,
    revoked_at   BIGINT
);
CREATE INDEX api_keys_account ON api_keys (account_id);

CREATE TABLE domains (
    id              BIGSERIAL PRIMARY KEY,
    account_id      BIGINT  NOT NULL REFERENCES accounts (id),
    name            TEXT    NOT NULL UNIQUE,
    created_at      BIGINT  NOT NULL,
    verified_at     BIGINT,
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
    key          TEXT   NOT NULL,
    window_start BIGINT NOT NULL,
    count        INTEGER NOT NULL,
    PRIMARY KEY (key, window_start)
);
