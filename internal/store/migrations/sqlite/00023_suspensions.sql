-- +goose Up
-- The operator's suspensions of the queue (package suspend): deliveries to a
-- site, or from a sending domain or an account, wait until the suspension
-- ends (until, NULL: when resumed). One row per kind and value. The queue's
-- claim reads this table every time, so a suspension holds in every process
-- at once.
CREATE TABLE suspensions (
    id         INTEGER PRIMARY KEY AUTOINCREMENT,
    kind       TEXT    NOT NULL, -- site | domain | account
    value      TEXT    NOT NULL, -- site name, domain name, account login
    reason     TEXT    NOT NULL DEFAULT '',
    created_at INTEGER NOT NULL,
    until      INTEGER,
    created_by TEXT    NOT NULL DEFAULT '',
    UNIQUE (kind, value)
);

-- A delivery put back because its site is suspended names the site, so
-- that resuming the site makes it due at once (NULL otherwise; a claim
-- clears it).
ALTER TABLE deliveries ADD COLUMN held_site TEXT;
CREATE INDEX deliveries_held_site ON deliveries (held_site) WHERE held_site IS NOT NULL;
