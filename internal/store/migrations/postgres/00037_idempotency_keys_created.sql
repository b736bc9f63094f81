-- +goose Up
-- Idempotency keys (the API's Idempotency-Key, and inbound routes'
-- forwards to an address, one per forwarded message) are kept 24 hours:
-- serve deletes older ones by their creation time.
CREATE INDEX idempotency_keys_created ON idempotency_keys (created_at);
