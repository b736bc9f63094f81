-- +goose Up
CREATE TABLE suppressions (
    id             INTEGER PRIMARY KEY AUTOINCREMENT,
    domain_id      INTEGER NOT NULL REFERENCES domains (id) ON DELETE CASCADE,
    type           TEXT    NOT NULL, -- unsubscribe | bounce | whitelist
    recipient_type TEXT    NOT NULL, -- email | domain
    recipient      TEXT    NOT NULL, -- normal form: lower case, A-label domain
    tags           TEXT,
    description    TEXT,
    source         TEXT,
    created_at     INTEGER NOT NULL,
    UNIQUE (domain_id, type, recipient)
);
-- The check looks up (domain, recipient) for addresses and their domains.
CREATE INDEX suppressions_recipient ON suppressions (domain_id, recipient);
-- Validation asks whether an address hard-bounced for any domain.
CREATE INDEX suppressions_bounced ON suppressions (recipient) WHERE type = 'bounce';
-- Lists page through one type newest first.
CREATE INDEX suppressions_list ON suppressions (domain_id, type, created_at DESC, id DESC);

-- Totals per list, kept by triggers, so a page does not count the whole
-- list (a million-row list costs one row read instead of a scan).
CREATE TABLE suppression_counts (
    domain_id INTEGER NOT NULL REFERENCES domains (id) ON DELETE CASCADE,
    type      TEXT    NOT NULL,
    n         INTEGER NOT NULL,
    PRIMARY KEY (domain_id, type)
);

-- +goose StatementBegin
CREATE TRIGGER suppressions_count_insert AFTER INSERT ON suppressions BEGIN
    INSERT INTO suppression_counts (domain_id, type, n) VALUES (NEW.domain_id, NEW.type, 1)
    ON CONFLICT (domain_id, type) DO UPDATE SET n = n + 1;
END;
-- +goose StatementEnd

-- +goose StatementBegin
CREATE TRIGGER suppressions_count_delete AFTER DELETE ON suppressions BEGIN
    UPDATE suppression_counts SET n = n - 1 WHERE domain_id = OLD.domain_id AND type = OLD.type;
END;
-- +goose StatementEnd
