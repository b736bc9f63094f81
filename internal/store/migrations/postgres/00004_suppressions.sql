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

-- Statement-level triggers with transition tables: one counter update per
-- statement and list, not one per row (a per-row update of the same counter
-- row inside one transaction makes every update walk a longer version chain).
-- +goose StatementBegin
CREATE FUNCTION suppressions_count_insert() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO suppression_counts (domain_id, type, n)
    SELECT domain_id, type, COUNT(*) FROM new_rows GROUP BY domain_id, type
    ON CONFLICT (domain_id, type) DO UPDATE SET n = suppression_counts.n + excluded.n;
    RETURN NULL;
END
$$;
-- +goose StatementEnd

-- +goose StatementBegin
CREATE FUNCTION suppressions_count_delete() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    UPDATE suppression_counts c SET n = c.n - d.k
    FROM (SELECT domain_id, type, COUNT(*) AS k FROM old_rows GROUP BY domain_id, type) d
    WHERE c.domain_id = d.domain_id AND c.type = d.type;
    RETURN NULL;
END
$$;
-- +goose StatementEnd

CREATE TRIGGER suppressions_count_insert AFTER INSERT ON suppressions
    REFERENCING NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION suppressions_count_insert();
CREATE TRIGGER suppressions_count_delete AFTER DELETE ON suppressions
    REFERENCING OLD TABLE AS old_rows FOR EACH STATEMENT EXECUTE FUNCTION suppressions_count_delete();
