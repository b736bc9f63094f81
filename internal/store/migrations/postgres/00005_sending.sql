-- +goose Up
-- A send is one accepted request: its content is kept (attachments
-- included) so a retry after a restart builds the same message.
CREATE TABLE sends (
    id          BIGSERIAL PRIMARY KEY,
    domain_id   BIGINT  NOT NULL REFERENCES domains (id) ON DELETE CASCADE,
    account_id  BIGINT  NOT NULL,
    from_addr   TEXT    NOT NULL,
    from_name   TEXT    NOT NULL DEFAULT '',
    reply_to    TEXT    NOT NULL DEFAULT '',
    subject     TEXT    NOT NULL,
    text_body   TEXT    NOT NULL,
    html_body   TEXT    NOT NULL DEFAULT '',
    headers     TEXT    NOT NULL DEFAULT '{}', -- JSON object of custom headers
    options     TEXT    NOT NULL DEFAULT '',   -- attachment_options JSON as given
    tags        TEXT    NOT NULL DEFAULT '',
    processed   INTEGER NOT NULL DEFAULT 0,    -- attachments already processed
    created_at  BIGINT  NOT NULL
);

CREATE TABLE send_attachments (
    send_id      BIGINT  NOT NULL REFERENCES sends (id) ON DELETE CASCADE,
    idx          INTEGER NOT NULL,
    filename     TEXT    NOT NULL,
    content_type TEXT    NOT NULL,
    data         BYTEA   NOT NULL,
    PRIMARY KEY (send_id, idx)
);

-- The delivery queue is this table: one row per recipient with its state.
CREATE TABLE deliveries (
    id              BIGSERIAL PRIMARY KEY,
    send_id         BIGINT  NOT NULL REFERENCES sends (id) ON DELETE CASCADE,
    domain_id       BIGINT  NOT NULL,
    message_id      TEXT    NOT NULL UNIQUE,
    recipient       TEXT    NOT NULL,
    state           TEXT    NOT NULL, -- pending | sending | deferred | delivered | failed | bounced
    attempts        INTEGER NOT NULL DEFAULT 0,
    next_attempt_at BIGINT  NOT NULL,
    lease_owner     TEXT,
    lease_until     BIGINT,
    last_code       INTEGER,
    last_message    TEXT,
    created_at      BIGINT  NOT NULL,
    updated_at      BIGINT  NOT NULL
);
-- Workers claim due rows in next_attempt_at order; the rescuer finds
-- expired leases. Both indexes hold only the rows they serve.
CREATE INDEX deliveries_due ON deliveries (next_attempt_at) WHERE state IN ('pending', 'deferred');
CREATE INDEX deliveries_leased ON deliveries (lease_until) WHERE state = 'sending';
CREATE INDEX deliveries_send ON deliveries (send_id);

-- Idempotency-Key: the first answer to a key is replayed for 24 hours.
CREATE TABLE idempotency_keys (
    account_id  BIGINT  NOT NULL,
    key         TEXT    NOT NULL,
    status      INTEGER NOT NULL,
    response    TEXT    NOT NULL,
    created_at  BIGINT  NOT NULL,
    PRIMARY KEY (account_id, key)
);
