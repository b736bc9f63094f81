-- +goose Up
-- The last check of a domain's DNS records (issue 32): when it ran, and
-- what it found as JSON ({"ok":bool,"records":{"spf":"ok",...}}; '' before
-- any). A failed check no longer unverifies a domain: it is shown as
-- "records changed since verification". Verified domains are re-checked
-- daily, the longest unchecked first.
ALTER TABLE domains ADD COLUMN dns_checked_at INTEGER;
ALTER TABLE domains ADD COLUMN dns_check TEXT NOT NULL DEFAULT '';
CREATE INDEX domains_dns_due ON domains ((COALESCE(dns_checked_at, verified_at))) WHERE verified_at IS NOT NULL;
