-- +goose Up
-- The team member who made a key (NULL: the account itself, or a key made
-- before this migration). Removing a member revokes the keys it made, in
-- the console or with one of its keys: someone who left the team keeps no
-- way in. The member's row going sets the column back to NULL; the key
-- stays revoked, in the list.
ALTER TABLE api_keys ADD COLUMN member_id BIGINT REFERENCES account_members (id) ON DELETE SET NULL;
CREATE INDEX api_keys_member ON api_keys (member_id) WHERE member_id IS NOT NULL;

