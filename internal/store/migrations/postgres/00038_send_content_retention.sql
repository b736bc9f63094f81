-- +goose Up
-- A send's content (bodies, the raw message, attachments) is kept as long
-- as the log: once every delivery of it is final and older than
-- --log-retention, the log's pruning empties it and stamps pruned_at. The
-- row stays, with its links (click tracking redirects by them), so that
-- its deliveries (tracking, unsubscribe links, late complaints) keep
-- working. The index holds the sends not pruned yet, oldest first.
ALTER TABLE sends ADD COLUMN pruned_at BIGINT;
CREATE INDEX sends_unpruned ON sends (created_at) WHERE pruned_at IS NULL;
