-- +goose Up
-- Forwards of received mail to URLs (issue 31): a route's format says what
-- its forward(URL) actions and store notifications post ('mailgun' form
-- fields, Postmark's 'json', or the 'raw' message).
ALTER TABLE inbound_routes ADD COLUMN format TEXT NOT NULL DEFAULT 'mailgun';
-- The outbox of those posts: one row per action, written before the
-- message is answered 250, posted by the serve processes (a lease holds a
-- row for one of them) until it is answered 2xx ('posted') or refused for
-- good or past its retry window ('failed'). token is the row's identity
-- derived from the message as the client sent it, the recipient and the
-- action, unique: a client's retry of a message refused after its posts
-- were queued joins the same row, and receivers dedupe by it. raw is the
-- message as received ('' once done); kind is 'forward' or 'notify'
-- (stored_id names the stored copy). Done rows are kept for the
-- deduplication until the retention deletes them.
CREATE TABLE inbound_posts (
    id              BIGSERIAL PRIMARY KEY,
    token           TEXT    NOT NULL UNIQUE,
    account_id      BIGINT NOT NULL REFERENCES accounts (id) ON DELETE CASCADE,
    domain_id       BIGINT NOT NULL REFERENCES domains (id) ON DELETE CASCADE,
    route_id        TEXT    NOT NULL,
    kind            TEXT    NOT NULL,
    url             TEXT    NOT NULL,
    format          TEXT    NOT NULL,
    recipient       TEXT    NOT NULL,
    sender          TEXT    NOT NULL,
    message_id      TEXT    NOT NULL,
    stored_id       TEXT    NOT NULL DEFAULT '',
    raw             BYTEA   NOT NULL,
    state           TEXT    NOT NULL DEFAULT 'pending',
    attempts        INTEGER NOT NULL DEFAULT 0,
    last_status     INTEGER NOT NULL DEFAULT 0,
    last_error      TEXT    NOT NULL DEFAULT '',
    next_attempt_at BIGINT NOT NULL,
    lease_owner     TEXT,
    lease_until     BIGINT,
    created_at      BIGINT NOT NULL,
    done_at         BIGINT
);
-- The dispatchers' look for due rows; retention walks created_at.
CREATE INDEX inbound_posts_due ON inbound_posts (state, next_attempt_at);
CREATE INDEX inbound_posts_created ON inbound_posts (created_at);
CREATE INDEX inbound_posts_domain ON inbound_posts (domain_id);
