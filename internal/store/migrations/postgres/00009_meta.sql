-- +goose Up
-- Facts about the installation itself, by name: the secret key's
-- fingerprint (so a process started with another key refuses to run
-- instead of sealing new values that the others cannot open) and the
-- validation cache's purge counter (so running servers drop their
-- in-memory copies when `postline cache purge` runs).
CREATE TABLE meta (
    name  TEXT PRIMARY KEY,
    value TEXT NOT NULL
);
