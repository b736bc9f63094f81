-- +goose Up
-- cc and display names on the send endpoint: what the To and Cc headers of
-- a send show (JSON {"to": [...], "cc": [...]} of {"name", "addr"}; empty
-- when each copy shows only its recipient).
ALTER TABLE sends ADD COLUMN addressing TEXT NOT NULL DEFAULT '';
