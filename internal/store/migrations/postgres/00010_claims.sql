-- +goose Up
-- Domain claims (issue 14): an unverified domain reserves nothing. Several
-- accounts may hold a claim on one name; the first to verify owns it and
-- the others' claims end. The name is unique among verified domains only,
-- and once per account.
ALTER TABLE domains DROP CONSTRAINT domains_name_key;
-- When an unverified claim lapses (NULL while verified).
ALTER TABLE domains ADD COLUMN claim_expires_at BIGINT;
-- Why the claim ended ('' while it stands): another account verified the name.
ALTER TABLE domains ADD COLUMN claim_ended TEXT NOT NULL DEFAULT '';
-- Claims standing at the upgrade get the default 72 hours from now.
UPDATE domains SET claim_expires_at = (EXTRACT(EPOCH FROM now()) * 1000)::BIGINT + 259200000 WHERE verified_at IS NULL;
DROP INDEX domains_account;
CREATE UNIQUE INDEX domains_account ON domains (account_id, name);
CREATE UNIQUE INDEX domains_verified_name ON domains (name) WHERE verified_at IS NOT NULL;
CREATE UNIQUE INDEX domains_verified_tracking ON domains (tracking_domain) WHERE verified_at IS NOT NULL AND tracking_domain <> '';
CREATE UNIQUE INDEX domains_verified_auth ON domains (auth_domain) WHERE verified_at IS NOT NULL AND auth_domain <> '';
CREATE INDEX domains_name ON domains (name);
CREATE INDEX domains_claim_expires ON domains (claim_expires_at) WHERE claim_expires_at IS NOT NULL;

-- A complaint about a delivery is logged once, like its unsubscribe
-- (unsubscribed_at): repeats are answered but not logged again.
ALTER TABLE deliveries ADD COLUMN complained_at BIGINT;
