-- +goose Up
-- Mailgun-shaped webhooks beside Postline's own: format says how a
-- webhook posts ('postline': batches with Standard Webhooks headers;
-- 'mailgun': each event alone, signed with the account's key), and
-- mailgun_event is the Mailgun webhook id a 'mailgun' one answers to
-- (delivered, permanent_fail ...). Their secret stays '' (the account's
-- key signs them).
ALTER TABLE webhooks ADD COLUMN format TEXT NOT NULL DEFAULT 'postline';
ALTER TABLE webhooks ADD COLUMN mailgun_event TEXT NOT NULL DEFAULT '';
-- Mailgun's "HTTP webhook signing key": one per account, sealed; '' until
-- first asked for.
ALTER TABLE accounts ADD COLUMN webhook_signing_key TEXT NOT NULL DEFAULT '';
