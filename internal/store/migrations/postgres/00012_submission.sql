-- +goose Up
-- SMTP submission (issue 15): a message submitted over SMTP is kept as the
-- client sent it (sends.raw) and every recipient's copy carries the
-- client's Message-ID, so deliveries.message_id (what the log shows) is
-- no longer unique per delivery; the delivery's own id stays the key.
ALTER TABLE sends ADD COLUMN raw BYTEA NOT NULL DEFAULT '\x';
ALTER TABLE deliveries DROP CONSTRAINT deliveries_message_id_key;
CREATE INDEX deliveries_message ON deliveries (message_id);
