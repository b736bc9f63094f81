-- +goose Up
CREATE TABLE suppressions (
    id             BIGSERIAL PRIMARY KEY,
    domain_id      BIGINT  NOT NULL REFERENCES domains (id) ON DELETE CASCADE,
    type           TEXT    NOT NULL, -- unsubscribe | bounce | whitelist
    recipient_type TEXT    NOT NULL, -- email | domain
    recipient      TEXT    NOT NULL, -- normal form: lower case, A-label domain
    tags           TEXT,
    description    TEXT,
    source         TEXT,
    created_at     BIGINT  NOT NULL,
    UNIQUE (domain_id, type, recipient)
);
-- The check looks up (domain, recipient) for addresses and their domains.
CREATE INDEX suppressions_recipient ON suppressions (domain_id, recipient);
-- Lists page through one type newest first.
CREATE INDEX suppressions_list ON suppressions (domain_id, type, created_at DESC, id DESC);
