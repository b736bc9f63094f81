-- +goose Up
-- Suspensions and automation actions are kept once they end, for a while
-- (package suspend's retention, 7 days), so the operator sees what was put
-- in force and when it ended, not only what holds now (issue 29: "each
-- activation and expiry is visible to the operator"). A row ends when its
-- until passes (expired: ended_at stays NULL, the end is until) or when it
-- is resumed or replaced by a new suspension of the same kind and value
-- (ended_at set, ended 'resumed' or 'replaced'). Only rows not ended are
-- one per kind and value; history rows are many.
ALTER TABLE suspensions DROP CONSTRAINT suspensions_kind_value_key;
ALTER TABLE suspensions ADD COLUMN ended_at BIGINT;                   -- when resumed or replaced; NULL otherwise
ALTER TABLE suspensions ADD COLUMN ended TEXT NOT NULL DEFAULT '';    -- '' | resumed | replaced
CREATE UNIQUE INDEX suspensions_current ON suspensions (kind, value) WHERE ended_at IS NULL;
CREATE INDEX suspensions_created ON suspensions (created_at);
