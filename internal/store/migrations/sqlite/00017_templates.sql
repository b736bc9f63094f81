-- +goose Up
-- Stored templates: one row per version, never changed once written; the
-- newest version of a name is the active one.
CREATE TABLE templates (
    id         INTEGER PRIMARY KEY AUTOINCREMENT,
    domain_id  INTEGER NOT NULL REFERENCES domains (id) ON DELETE CASCADE,
    name       TEXT    NOT NULL,
    version    INTEGER NOT NULL,
    subject    TEXT    NOT NULL,
    html       TEXT    NOT NULL DEFAULT '',
    text       TEXT    NOT NULL DEFAULT '',
    strict     INTEGER NOT NULL DEFAULT 0,
    created_at INTEGER NOT NULL,
    UNIQUE (domain_id, name, version)
);
