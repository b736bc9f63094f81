-- +goose Up
-- Inline files (the /v3/ API's inline parameter): the Content-ID the HTML
-- refers to as cid:...; '' for an ordinary attachment.
ALTER TABLE send_attachments ADD COLUMN content_id TEXT NOT NULL DEFAULT '';
