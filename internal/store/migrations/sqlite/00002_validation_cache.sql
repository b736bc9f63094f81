-- +goose Up
-- Validation results by (mode, normalised address). result is the JSON of
-- validation.Result; validated_at is kept apart so cached answers report
-- the time they were first computed.
CREATE TABLE validation_cache (
    key          TEXT    PRIMARY KEY,
    result       TEXT    NOT NULL,
    validated_at INTEGER NOT NULL,
    expires_at   INTEGER NOT NULL
);
CREATE INDEX validation_cache_expires ON validation_cache (expires_at);
