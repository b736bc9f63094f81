-- +goose Up
-- Team access (issue 32): an account's console users besides the account
-- itself (its login with a key or password is the owner). A member is
-- invited with a one-time link: invite_hash is the hex SHA-256 of its
-- token (the token itself is never stored), good until invite_expires_at
-- and once (invite_used_at). password_hash is the member's argon2id PHC
-- string, '' while the invitation is pending. email is folded to lower
-- case and names one member in the installation: it is what signs in.
CREATE TABLE account_members (
    id                INTEGER PRIMARY KEY AUTOINCREMENT,
    account_id        INTEGER NOT NULL REFERENCES accounts (id) ON DELETE CASCADE,
    email             TEXT    NOT NULL UNIQUE,
    role              TEXT    NOT NULL,
    password_hash     TEXT    NOT NULL DEFAULT '',
    invite_hash       TEXT    UNIQUE,
    invite_expires_at INTEGER,
    invite_used_at    INTEGER,
    created_at        INTEGER NOT NULL,
    last_sign_in_at   INTEGER
);
CREATE INDEX account_members_account ON account_members (account_id);

-- A session records its member (NULL: the account itself, the owner);
-- removing the member ends its sessions.
ALTER TABLE sessions ADD COLUMN member_id INTEGER REFERENCES account_members (id) ON DELETE CASCADE;
CREATE INDEX sessions_member ON sessions (member_id);

-- Who did what: the console's (and the API's) changes per account, kept
-- for --log-retention. actor is a member's email, the account's login or
-- "api key NAME"; client the address the request came from.
CREATE TABLE audit_log (
    id         INTEGER PRIMARY KEY AUTOINCREMENT,
    account_id INTEGER NOT NULL REFERENCES accounts (id) ON DELETE CASCADE,
    at         INTEGER NOT NULL,
    actor      TEXT    NOT NULL,
    action     TEXT    NOT NULL,
    target     TEXT    NOT NULL,
    client     TEXT    NOT NULL
);
CREATE INDEX audit_log_account ON audit_log (account_id, id);
CREATE INDEX audit_log_time ON audit_log (at);
