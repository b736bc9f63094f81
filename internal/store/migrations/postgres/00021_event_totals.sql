-- +goose Up
-- All-time entries per (domain, type), kept beside event_counts in the
-- same transactions: an unfiltered log page's total is a sum over at most
-- 11 x 16 rows instead of every hour the domain has (a month is ~8,000
-- rows). Striped by backend as event_counts, for the same reason.
CREATE TABLE event_totals (
    domain_id  BIGINT   NOT NULL REFERENCES domains (id) ON DELETE CASCADE,
    event_type TEXT     NOT NULL,
    stripe     SMALLINT NOT NULL,
    n          BIGINT   NOT NULL,
    PRIMARY KEY (domain_id, event_type, stripe)
);
INSERT INTO event_totals (domain_id, event_type, stripe, n)
    SELECT domain_id, event_type, 0, SUM(n) FROM event_counts GROUP BY domain_id, event_type;
