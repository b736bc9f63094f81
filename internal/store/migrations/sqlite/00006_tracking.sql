-- +goose Up
-- Per-domain tracking switches; off until the owner turns them on.
ALTER TABLE domains ADD COLUMN track_opens INTEGER NOT NULL DEFAULT 0;
ALTER TABLE domains ADD COLUMN track_clicks INTEGER NOT NULL DEFAULT 0;
ALTER TABLE domains ADD COLUMN track_unsubscribe INTEGER NOT NULL DEFAULT 0;
-- Host-based routing asks, per request, whether a host is a tracking domain.
CREATE INDEX domains_tracking_domain ON domains (tracking_domain) WHERE tracking_domain <> '';

-- The first open, click and unsubscribe of each delivery: setting one
-- from NULL in the transaction that records the event is what makes
-- details.first true exactly once.
ALTER TABLE deliveries ADD COLUMN opened_at INTEGER;
ALTER TABLE deliveries ADD COLUMN clicked_at INTEGER;
ALTER TABLE deliveries ADD COLUMN unsubscribed_at INTEGER;

-- +goose Down
DROP INDEX domains_tracking_domain;
ALTER TABLE deliveries DROP COLUMN unsubscribed_at;
ALTER TABLE deliveries DROP COLUMN clicked_at;
ALTER TABLE deliveries DROP COLUMN opened_at;
ALTER TABLE domains DROP COLUMN track_unsubscribe;
ALTER TABLE domains DROP COLUMN track_clicks;
ALTER TABLE domains DROP COLUMN track_opens;
