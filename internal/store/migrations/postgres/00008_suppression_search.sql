-- +goose Up
-- Numbered alike with SQLite's trigram index for suppression search; on
-- PostgreSQL the pg_trgm index of 00004 already serves it.
SELECT 1;

-- +goose Down
SELECT 1;
