-- +goose Up
-- The team member who sent a pending member's current invitation link
-- (NULL: the account itself, or the CLI). Removing that member expires
-- the links it sent that are still unused: someone who left the team
-- keeps no way back in. No foreign key (a reinvitation may name a member
-- newer than the row, which the store copy would insert first): removing
-- the member clears the column itself.
ALTER TABLE account_members ADD COLUMN invited_by INTEGER;
