-- +goose Up
-- Suspensions and automation actions are kept once they end, for a while
-- (package suspend's retention, 7 days), so the operator sees what was put
-- in force and when it ended, not only what holds now (issue 29: "each
-- activation and expiry is visible to the operator"). A row ends when its
-- until passes (expired: ended_at stays NULL, the end is until) or when it
-- is resumed or replaced by a new suspension of the same kind and value
-- (ended_at set, ended 'resumed' or 'replaced'). Only rows not ended are
-- one per kind and value; history rows are many.
--
-- SQLite cannot drop the table's UNIQUE (kind, value), so the table is
-- rebuilt (https://www.sqlite.org/lang_altertable.html#otheralter). No
-- table references suspensions.
CREATE TABLE suspensions_new (
    id         INTEGER PRIMARY KEY AUTOINCREMENT,
    kind       TEXT    NOT NULL, -- site | domain | account | tenant | config
    value      TEXT    NOT NULL,
    reason     TEXT    NOT NULL DEFAULT '',
    created_at INTEGER NOT NULL,
    until      INTEGER,
    created_by TEXT    NOT NULL DEFAULT '',
    action     TEXT    NOT NULL DEFAULT '',
    rule       TEXT    NOT NULL DEFAULT '',
    reply      TEXT    NOT NULL DEFAULT '',
    ended_at   INTEGER,                     -- when resumed or replaced; NULL otherwise
    ended      TEXT    NOT NULL DEFAULT ''  -- '' | resumed | replaced
);
INSERT INTO suspensions_new (id, kind, value, reason, created_at, until, created_by, action, rule, reply)
    SELECT id, kind, value, reason, created_at, until, created_by, action, rule, reply FROM suspensions;
DROP TABLE suspensions;
ALTER TABLE suspensions_new RENAME TO suspensions;
CREATE UNIQUE INDEX suspensions_current ON suspensions (kind, value) WHERE ended_at IS NULL;
CREATE INDEX suspensions_created ON suspensions (created_at);
