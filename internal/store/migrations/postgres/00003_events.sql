-- +goose Up
-- The delivery log, append-only (retention deletes old entries).
-- *_lc columns hold the values folded by Go (event.Fold) at insert, so the
-- case-insensitive filters are plain comparisons, indexable, and give the
-- same answers in both dialects.
CREATE TABLE events (
    id           BIGSERIAL,
    domain_id    BIGINT NOT NULL REFERENCES domains (id) ON DELETE CASCADE,
    message_id   TEXT   NOT NULL,
    event_type   TEXT   NOT NULL,
    sender       TEXT   NOT NULL,
    sender_lc    TEXT   NOT NULL,
    recipient    TEXT   NOT NULL,
    recipient_lc TEXT   NOT NULL,
    subject      TEXT   NOT NULL,
    subject_lc   TEXT   NOT NULL,
    tags         TEXT,
    tags_lc      TEXT,
    created_at   BIGINT NOT NULL,
    details      TEXT   NOT NULL, -- a JSON object, kept as text: it is only ever passed through
    -- Streams, follow and resume page by id within a domain; no query
    -- looks an entry up by id alone, so the key leads with domain_id.
    PRIMARY KEY (domain_id, id)
);
-- One index per access path, each led by domain_id so that a query never
-- reads another domain's rows, and each ending in (created_at, id) so that
-- the list's (created_at DESC, id DESC) order comes from the index and a
-- page stops after LIMIT + OFFSET rows:
-- newest-first pages, time ranges, retention, edge counts of totals;
CREATE INDEX events_time ON events (domain_id, created_at, id);
-- event_type pages and counts within a time range;
CREATE INDEX events_type ON events (domain_id, event_type, created_at, id);
-- exact recipient and sender (folded).
CREATE INDEX events_recipient ON events (domain_id, recipient_lc, created_at, id);
CREATE INDEX events_sender ON events (domain_id, sender_lc, created_at, id);

-- Entries per (domain, hour, type), kept in the inserting and pruning
-- transactions: totals of time-range and type filters are a sum over at
-- most 24 x 11 rows a day plus exact counts of the two partial hours.
-- On PostgreSQL each connection adds to its own stripe (backend pid % 16)
-- so that concurrent transactions recording the same domain, hour and type
-- do not queue on one row lock until they commit; the maintenance pass
-- merges the stripes of past hours into stripe 0. SQLite has one writer
-- and uses stripe 0 only.
CREATE TABLE event_counts (
    domain_id  BIGINT   NOT NULL REFERENCES domains (id) ON DELETE CASCADE,
    hour       BIGINT   NOT NULL, -- Unix ms of the hour's start
    event_type TEXT     NOT NULL,
    stripe     SMALLINT NOT NULL,
    n          BIGINT   NOT NULL,
    PRIMARY KEY (domain_id, hour, event_type, stripe)
);

-- Subject and tags substrings (LIKE '%...%' on the folded columns) use
-- trigram GIN indexes when pg_trgm can be had: it is a trusted extension
-- (PostgreSQL 13+), so a database owner may create it. An extension lives
-- in one schema per database; reuse it wherever it already is, else put it
-- in public (not in our schema, whose drop would take other schemas'
-- indexes with it). Without it the filters still work, by scanning the
-- rows another index walks.
-- +goose StatementBegin
DO $$
DECLARE
    ext_schema text;
BEGIN
    SELECT n.nspname INTO ext_schema
      FROM pg_extension e JOIN pg_namespace n ON n.oid = e.extnamespace
     WHERE e.extname = 'pg_trgm';
    IF ext_schema IS NULL THEN
        BEGIN
            CREATE EXTENSION IF NOT EXISTS pg_trgm SCHEMA public;
        EXCEPTION WHEN OTHERS THEN
            RAISE NOTICE 'pg_trgm unavailable (%); subject and tags filters will not be indexed', SQLERRM;
        END;
        SELECT n.nspname INTO ext_schema
          FROM pg_extension e JOIN pg_namespace n ON n.oid = e.extnamespace
         WHERE e.extname = 'pg_trgm';
    END IF;
    IF ext_schema IS NOT NULL THEN
        EXECUTE format('CREATE INDEX events_subject_trgm ON events USING gin (subject_lc %I.gin_trgm_ops)', ext_schema);
        EXECUTE format('CREATE INDEX events_tags_trgm ON events USING gin (tags_lc %I.gin_trgm_ops)', ext_schema);
    END IF;
END
$$;
-- +goose StatementEnd
