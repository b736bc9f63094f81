-- +goose Up
-- A webhook reads the delivery log from last_event_id (the id of the last
-- entry it dealt with); there is no separate outbox.
CREATE TABLE webhooks (
    id              BIGSERIAL PRIMARY KEY,
    domain_id       BIGINT NOT NULL REFERENCES domains (id) ON DELETE CASCADE,
    url             TEXT    NOT NULL,
    secret          TEXT    NOT NULL,            -- sealed
    event_types     TEXT    NOT NULL DEFAULT '', -- comma-separated; empty = all
    last_event_id   BIGINT NOT NULL DEFAULT 0,
    attempts        INTEGER NOT NULL DEFAULT 0,  -- failed posts in a row
    next_attempt_at BIGINT NOT NULL,
    last_error      TEXT    NOT NULL DEFAULT '',
    last_success_at BIGINT,
    lease_owner     TEXT,
    lease_until     BIGINT,
    created_at      BIGINT NOT NULL
);
CREATE INDEX webhooks_domain ON webhooks (domain_id);
CREATE INDEX webhooks_due ON webhooks (next_attempt_at);

-- +goose Down
DROP TABLE webhooks;
