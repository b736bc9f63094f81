-- +goose Up
-- List-cleaning jobs that probe mailboxes (check_mailbox), and their
-- counts by deliverability verdict.
ALTER TABLE validation_jobs ADD COLUMN check_mailbox INTEGER NOT NULL DEFAULT 0;
ALTER TABLE validation_jobs ADD COLUMN deliverable INTEGER NOT NULL DEFAULT 0;
ALTER TABLE validation_jobs ADD COLUMN undeliverable INTEGER NOT NULL DEFAULT 0;
ALTER TABLE validation_jobs ADD COLUMN risky_deliverability INTEGER NOT NULL DEFAULT 0;
ALTER TABLE validation_jobs ADD COLUMN unknown_deliverability INTEGER NOT NULL DEFAULT 0;
