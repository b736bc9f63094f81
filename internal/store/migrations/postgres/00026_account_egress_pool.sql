-- +goose Up
-- The egress pool (--egress-file) an account's domains send direct
-- deliveries through when they name none themselves; '' for none.
ALTER TABLE accounts ADD COLUMN egress_pool TEXT NOT NULL DEFAULT '';
