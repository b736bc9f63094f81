-- +goose Up
-- The processes delivering from this database, each beating every few
-- seconds (package members). provider_connection_limit and
-- provider_max_message_rate hold across processes by each live process
-- taking its share of them: a process counts the members seen lately, and
-- its place among them, to know its share. A process that stops deletes
-- its row; one that dies is left out once its beat is old.
CREATE TABLE delivery_members (
    id         TEXT    PRIMARY KEY,
    started_at INTEGER NOT NULL,
    seen_at    INTEGER NOT NULL
);
CREATE INDEX delivery_members_seen ON delivery_members (seen_at);

