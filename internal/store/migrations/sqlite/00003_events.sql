-- +goose Up
-- The delivery log, append-only (retention deletes old entries).
-- *_lc columns hold the values folded by Go (event.Fold) at insert, so the
-- case-insensitive filters are plain comparisons, indexable, and give the
-- same answers in both dialects (SQLite's own lower() is ASCII-only).
CREATE TABLE events (
    -- AUTOINCREMENT: an id is never reused after pruning empties the
    -- table, so a client's Last-Event-ID always means the same entry.
    id           INTEGER PRIMARY KEY AUTOINCREMENT,
    domain_id    INTEGER NOT NULL REFERENCES domains (id) ON DELETE CASCADE,
    message_id   TEXT    NOT NULL,
    event_type   TEXT    NOT NULL,
    sender       TEXT    NOT NULL,
    sender_lc    TEXT    NOT NULL,
    recipient    TEXT    NOT NULL,
    recipient_lc TEXT    NOT NULL,
    subject      TEXT    NOT NULL,
    subject_lc   TEXT    NOT NULL,
    tags         TEXT,
    tags_lc      TEXT,
    created_at   INTEGER NOT NULL,
    details      TEXT    NOT NULL -- a JSON object
);
-- One index per access path, each led by domain_id so that a query never
-- reads another domain's rows. SQLite appends the rowid (id) to every
-- index, so each is also ordered by id within its key: the list's
-- (created_at DESC, id DESC) order and keyset pages come from the index.
-- Newest-first pages, time ranges, retention, edge counts of totals:
CREATE INDEX events_time ON events (domain_id, created_at);
-- event_type pages and counts within a time range:
CREATE INDEX events_type ON events (domain_id, event_type, created_at);
-- exact recipient and sender (folded): an equality prefix, then time order:
CREATE INDEX events_recipient ON events (domain_id, recipient_lc, created_at);
CREATE INDEX events_sender ON events (domain_id, sender_lc, created_at);
-- Streams, follow and resume page by id within a domain:
CREATE INDEX events_id ON events (domain_id);
-- Subject and tags substrings have no index in SQLite: they filter the
-- rows another index walks (the newest first, stopping at the page).

-- Entries per (domain, hour, type), kept in the inserting and pruning
-- transactions: totals of time-range and type filters are a sum over at
-- most 24 x 11 rows a day plus exact counts of the two partial hours.
-- On PostgreSQL each connection adds to its own stripe (backend pid % 16)
-- so that concurrent transactions recording the same domain, hour and type
-- do not queue on one row lock until they commit; the maintenance pass
-- merges the stripes of past hours into stripe 0. SQLite has one writer
-- and uses stripe 0 only.
CREATE TABLE event_counts (
    domain_id  INTEGER NOT NULL REFERENCES domains (id) ON DELETE CASCADE,
    hour       INTEGER NOT NULL, -- Unix ms of the hour's start
    event_type TEXT    NOT NULL,
    stripe     INTEGER NOT NULL,
    n          INTEGER NOT NULL,
    PRIMARY KEY (domain_id, hour, event_type, stripe)
) WITHOUT ROWID;
