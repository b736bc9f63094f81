-- +goose Up
-- List cleaning: a job's addresses, in input order, each with its result
-- once validated (NULL until then). Workers lease a job, validate its
-- pending items in batches and commit results and counters together, so a
-- job continues after a restart where it stopped.
CREATE TABLE validation_jobs (
    id          INTEGER PRIMARY KEY AUTOINCREMENT,
    account_id  INTEGER NOT NULL REFERENCES accounts (id) ON DELETE CASCADE,
    status      TEXT    NOT NULL, -- queued | running | done | cancelled | failed
    total       INTEGER NOT NULL,
    done        INTEGER NOT NULL DEFAULT 0,
    valid       INTEGER NOT NULL DEFAULT 0,
    invalid     INTEGER NOT NULL DEFAULT 0,
    risky       INTEGER NOT NULL DEFAULT 0,
    error       TEXT    NOT NULL DEFAULT '',
    waiting_until INTEGER,            -- the account's validation budget is spent until then
    lease_owner TEXT,
    lease_until INTEGER,
    created_at  INTEGER NOT NULL,
    updated_at  INTEGER NOT NULL
);
CREATE INDEX validation_jobs_account ON validation_jobs (account_id, id);
CREATE INDEX validation_jobs_open ON validation_jobs (id) WHERE status IN ('queued', 'running');

CREATE TABLE validation_job_items (
    job_id  INTEGER NOT NULL REFERENCES validation_jobs (id) ON DELETE CASCADE,
    idx     INTEGER NOT NULL,
    email   TEXT    NOT NULL,
    result  TEXT,                  -- the validation result as JSON; NULL while pending
    PRIMARY KEY (job_id, idx)
);
