-- +goose Up
-- Inbound routes, an account's (Mailgun's Routes): which received messages
-- a route takes (its expression) and what it does with them (its actions,
-- a JSON array of strings as written). Listed and evaluated by priority,
-- then creation. id is Mailgun-shaped: 24 hex digits.
CREATE TABLE inbound_routes (
    id          TEXT    PRIMARY KEY,
    account_id  INTEGER NOT NULL REFERENCES accounts (id) ON DELETE CASCADE,
    priority    INTEGER NOT NULL DEFAULT 0,
    description TEXT    NOT NULL DEFAULT '',
    expression  TEXT    NOT NULL,
    actions     TEXT    NOT NULL,
    created_at  INTEGER NOT NULL
);
CREATE INDEX inbound_routes_account ON inbound_routes (account_id, priority, created_at, id);
