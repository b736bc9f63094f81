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
-- Validation asks whether an address hard-bounced for any domain.
CREATE INDEX suppressions_bounced ON suppressions (recipient) WHERE type = 'bounce';
-- Lists page through one type newest first.
CREATE INDEX suppressions_list ON suppressions (domain_id, type, created_at DESC, id DESC);

-- Substring search on recipients uses trigrams. The extension lives in
-- public whatever the search_path, so every schema can use it.
CREATE EXTENSION IF NOT EXISTS pg_trgm WITH SCHEMA public;
CREATE INDEX suppressions_recipient_trgm ON suppressions USING gin (recipient public.gin_trgm_ops);

-- Totals per list, kept by a trigger, so a page does not count the whole
-- list (a million-row list costs one row read instead of a scan).
CREATE TABLE suppression_counts (
    domain_id BIGINT  NOT NULL REFERENCES domains (id) ON DELETE CASCADE,
    type      TEXT    NOT NULL,
    n         BIGINT  NOT NULL,
    PRIMARY KEY (domain_id, type)
);

-- +goose StatementBegin
CREATE FUNCTION suppressions_count() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF TG_OP = 'INSERT' THEN
        INSERT INTO suppression_counts (domain_id, type, n) VALUES (NEW.domain_id, NEW.type, 1)
        ON CONFLICT (domain_id, type) DO UPDATE SET n = suppression_counts.n + 1;
    ELSE
        UPDATE suppression_counts SET n = n - 1 WHERE domain_id = OLD.domain_id AND type = OLD.type;
    END IF;
    RETURN NULL;
END
$$;
-- +goose StatementEnd

CREATE TRIGGER suppressions_count AFTER INSERT OR DELETE ON suppressions
    FOR EACH ROW EXECUTE FUNCTION suppressions_count();
