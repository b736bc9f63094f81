-- +goose Up
-- Mailgun's statistics (GET /v3/{domain}/stats/total, /tags/{tag}/stats):
-- entries per (domain, tag, hour, stat key), kept in the transactions that
-- record the entries, as event_counts are. A stat key is Mailgun's counter
-- an entry adds to (mailgun.StatKey: accepted.outgoing, delivered.smtp,
-- failed.permanent.suppress-bounce ...), which the entry's type alone
-- does not give (a complaint is an `unsubscribed` entry; a permanent
-- failure is recorded twice). tag '' holds the domain's own counts; a
-- tagged entry also adds to each of its tracked tags. Striped by backend
-- as event_counts (the maintenance pass merges past hours' stripes).
-- Retention deletes the hours older than the log's.
CREATE TABLE stat_counts (
    domain_id BIGINT          NOT NULL REFERENCES domains (id) ON DELETE CASCADE,
    tag       TEXT COLLATE "C" NOT NULL,
    hour      BIGINT          NOT NULL, -- Unix ms of the hour's start
    stat      TEXT            NOT NULL,
    stripe    SMALLINT        NOT NULL,
    n         BIGINT          NOT NULL,
    PRIMARY KEY (domain_id, tag, hour, stat, stripe)
);
-- Retention and compaction walk hours across domains.
CREATE INDEX stat_counts_hour ON stat_counts (hour);

-- A domain's tags (folded), at most stats.MaxTagsPerDomain: the first
-- and last use (last_seen rewritten at most once a minute) and the
-- description Mailgun's PUT sets. Names compare bytewise (COLLATE "C")
-- so that pages by name are the same in both dialects.
CREATE TABLE tags (
    domain_id   BIGINT          NOT NULL REFERENCES domains (id) ON DELETE CASCADE,
    tag         TEXT COLLATE "C" NOT NULL,
    description TEXT            NOT NULL DEFAULT '',
    first_seen  BIGINT          NOT NULL,
    last_seen   BIGINT          NOT NULL,
    PRIMARY KEY (domain_id, tag)
);
-- Retention forgets tags unused for as long as the log is kept.
CREATE INDEX tags_last_seen ON tags (last_seen);

-- The domains' counts of the log kept so far, from event_counts: by type
-- alone, so before the upgrade complaints count as unsubscribes, opens
-- and clicks have no unique count, and permanent failures (a `bounced`
-- or `failed` entry each: the worker's permanent_fail is followed by
-- exactly one of them) have no kind. Tags are tracked from the upgrade on.
INSERT INTO stat_counts (domain_id, tag, hour, stat, stripe, n)
SELECT domain_id, '', hour, stat, 0, SUM(n) FROM (
    SELECT domain_id, hour, n, CASE event_type
        WHEN 'queued' THEN 'accepted.outgoing'
        WHEN 'delivered' THEN 'delivered.smtp'
        WHEN 'temporary_fail' THEN 'failed.temporary.espblock'
        WHEN 'bounced' THEN 'failed.permanent.other'
        WHEN 'failed' THEN 'failed.permanent.other'
        WHEN 'opened' THEN 'opened.repeat'
        WHEN 'clicked' THEN 'clicked.repeat'
        WHEN 'unsubscribed' THEN 'unsubscribed.total'
    END AS stat
    FROM event_counts
) typed
WHERE stat IS NOT NULL
GROUP BY domain_id, hour, stat
HAVING SUM(n) > 0;
