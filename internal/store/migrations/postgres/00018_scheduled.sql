-- +goose Up
-- Scheduled sends: the time the sender asked for (Unix ms; NULL: at once).
-- The deliveries wait in the queue with next_attempt_at at that time; the
-- column keeps the message's age counting from it, and shows it as
-- scheduled until then. A cancelled delivery has state 'cancelled'.
ALTER TABLE sends ADD COLUMN deliver_at BIGINT;
