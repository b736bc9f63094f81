-- +goose Up
-- Receiving mail (issue 31): a domain takes mail at its own addresses once
-- inbound is on (and it is verified); what a route's store() keeps is a
-- row here, the message as received (our Authentication-Results and
-- Received fields on top) in raw, for --inbound-retention. *_lc columns
-- hold the values folded by Go (event.Fold), as the log's do, so the
-- filters compare alike in both dialects. routes is a JSON array of the
-- route ids that took the message, auth a JSON object of its SPF, DKIM
-- and DMARC results. id is 32 hex digits, unguessable.
ALTER TABLE domains ADD COLUMN inbound INTEGER NOT NULL DEFAULT 0;
CREATE TABLE inbound_messages (
    id           TEXT    PRIMARY KEY,
    account_id   INTEGER NOT NULL REFERENCES accounts (id) ON DELETE CASCADE,
    domain_id    INTEGER NOT NULL REFERENCES domains (id) ON DELETE CASCADE,
    recipient    TEXT    NOT NULL,
    recipient_lc TEXT    NOT NULL,
    sender       TEXT    NOT NULL,
    sender_lc    TEXT    NOT NULL,
    from_header  TEXT    NOT NULL,
    subject      TEXT    NOT NULL,
    subject_lc   TEXT    NOT NULL,
    message_id   TEXT    NOT NULL,
    routes       TEXT    NOT NULL,
    auth         TEXT    NOT NULL,
    size         INTEGER NOT NULL,
    raw          BLOB    NOT NULL,
    received_at  INTEGER NOT NULL
);
-- A domain's list, newest first; retention walks received_at; an
-- account's stored bytes are summed for its bound.
CREATE INDEX inbound_messages_domain ON inbound_messages (domain_id, received_at);
CREATE INDEX inbound_messages_time ON inbound_messages (received_at);
CREATE INDEX inbound_messages_account ON inbound_messages (account_id);
