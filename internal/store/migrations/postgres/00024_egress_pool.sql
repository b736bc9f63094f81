-- +goose Up
-- The egress pool (--egress-file) a domain's direct deliveries go out
-- through; '' for none (the system's source address).
ALTER TABLE domains ADD COLUMN egress_pool TEXT NOT NULL DEFAULT '';
