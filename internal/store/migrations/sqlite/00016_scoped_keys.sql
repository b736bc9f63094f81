-- +goose Up
-- Scoped keys: comma-separated scope and domain lists ('' = all, as every
-- key was before) and an optional expiry (Unix ms).
ALTER TABLE api_keys ADD COLUMN scopes TEXT NOT NULL DEFAULT '';
ALTER TABLE api_keys ADD COLUMN domains TEXT NOT NULL DEFAULT '';
ALTER TABLE api_keys ADD COLUMN expires_at INTEGER;

