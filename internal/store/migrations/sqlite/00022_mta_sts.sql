-- +goose Up
-- MTA-STS policies (RFC 8461) of recipient domains, as fetched: the body as
-- served, under the id of the TXT record it was fetched under, used until
-- expires_at (fetched_at + max_age) and fetched again from refresh_at. A
-- policy outlives a failing TXT lookup or policy server by design, and is
-- shared by every process (package mtasts).
CREATE TABLE mta_sts_policies (
    domain     TEXT    PRIMARY KEY,
    policy_id  TEXT    NOT NULL,
    body       TEXT    NOT NULL,
    fetched_at INTEGER NOT NULL,
    expires_at INTEGER NOT NULL,
    refresh_at INTEGER NOT NULL
);
