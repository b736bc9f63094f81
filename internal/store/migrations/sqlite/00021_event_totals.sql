-- +goose Up
-- All-time entries per (domain, type), kept beside event_counts in the
-- same transactions: an unfiltered log page's total is a sum over at most
-- 11 rows instead of every hour the domain has (a month is ~8,000 rows,
-- which cost more than reading the page itself). Striped as event_counts.
CREATE TABLE event_totals (
    domain_id  INTEGER NOT NULL REFERENCES domains (id) ON DELETE CASCADE,
    event_type TEXT    NOT NULL,
    stripe     INTEGER NOT NULL,
    n          INTEGER NOT NULL,
    PRIMARY KEY (domain_id, event_type, stripe)
) WITHOUT ROWID;
INSERT INTO event_totals (domain_id, event_type, stripe, n)
    SELECT domain_id, event_type, 0, SUM(n) FROM event_counts GROUP BY domain_id, event_type;
