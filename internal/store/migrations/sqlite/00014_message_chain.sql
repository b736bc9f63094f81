-- +goose Up
-- A message's chain (the console's chain page, the log's message filter)
-- is read newest first: the index ends in the log's order, so the lookup
-- and the order are one index range and no scan of the domain's log.
DROP INDEX events_message;
CREATE INDEX events_message ON events (domain_id, message_id, created_at, id);
