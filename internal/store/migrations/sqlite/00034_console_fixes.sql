-- +goose Up
-- The last check of a domain's DNS records (issue 32): when it ran, and
-- what it found as JSON ({"ok":bool,"records":{"spf":"ok",...}}; '' before
-- any). A failed check no longer unverifies a domain: it is shown as
-- "records changed since verification". Verified domains are re-checked
-- daily, the longest unchecked first.
ALTER TABLE domains ADD COLUMN dns_checked_at INTEGER;
ALTER TABLE domains ADD COLUMN dns_check TEXT NOT NULL DEFAULT '';
CREATE INDEX domains_dns_due ON domains ((COALESCE(dns_checked_at, verified_at))) WHERE verified_at IS NOT NULL;

-- An uploaded CSV keeps its other columns for the results: the job names
-- them (a JSON array; '' for a list of lines), each line holds its cells
-- (a JSON array; NULL for none).
ALTER TABLE validation_jobs ADD COLUMN columns TEXT NOT NULL DEFAULT '';
ALTER TABLE validation_job_items ADD COLUMN extra TEXT;
