-- +goose Up
-- Ed25519 DKIM (RFC 8463, issue 33): an optional second signature beside
-- the RSA one. dkim_ed25519 is the switch; dkim_ed25519_key the sealed
-- PKCS#8 key ('' until first turned on; kept when turned off, so turning
-- it on again needs no new DNS record).
ALTER TABLE domains ADD COLUMN dkim_ed25519 INTEGER NOT NULL DEFAULT 0;
ALTER TABLE domains ADD COLUMN dkim_ed25519_key TEXT NOT NULL DEFAULT '';
