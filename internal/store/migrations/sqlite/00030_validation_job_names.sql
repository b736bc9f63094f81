-- +goose Up
-- Mailgun's bulk validation names a list (its list_id): a job may carry
-- that name, one job per name and account at a time. Deleting the list
-- through Mailgun's API clears the name (and cancels the job if open).
ALTER TABLE validation_jobs ADD COLUMN name TEXT;
CREATE UNIQUE INDEX validation_jobs_name ON validation_jobs (account_id, name) WHERE name IS NOT NULL;
