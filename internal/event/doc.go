// Package event is the delivery log: what happened to each message, per
// sending domain, recorded as entries and read back as paged lists or as a
// stream with a live tail.
//
// # Contract
//
//   - An Entry has one of thirteen Types (a closed set, see Types): eleven
//     for sent mail, Received and Post for mail to inbound domains. Entries
//     are append-only: nothing updates them; retention deletes the old ones.
//   - Record stores a batch in one transaction and only then wakes the
//     domain's followers. RecordTx does the same inside a caller's
//     transaction and returns the wake-up to call after that transaction
//     commits, so followers are never woken for entries that may roll back.
//   - Bounds is also the followers' horizon: no id at or below its hi can
//     still appear. Ids are handed out at insert, not at commit, so on
//     PostgreSQL a transaction holding id 10 may commit after one holding
//     id 11; the store makes every inserting transaction announce a bound
//     below its ids (a shared advisory lock, visible in pg_locks) and
//     Bounds stops below the lowest bound announced, so an "id > last"
//     follower never skips a late commit, and writers never wait for each
//     other. On SQLite the single writer commits in id order. Streams,
//     follow and resume rely on this.
//   - Lists are newest first (created_at desc, id desc) with offset paging
//     and a total. The total is exact when the filter is at most a time
//     range and an event type (it comes from hourly per-type counts kept
//     with the entries); with sender, recipient, subject or tags filters it
//     is counted up to a cap and reported as a lower bound beyond it
//     (Page.Exact false), so that one page never scans millions of rows.
//   - Streams are oldest first in id order, read in keyset pages (never
//     OFFSET, never the whole result in memory), capped by a limit that
//     counts every entry sent on the stream; with Follow they keep going
//     with entries recorded after the backlog. Resuming after id N gives
//     exactly the entries after N.
//   - Sender and recipient filters are exact and case-insensitive; subject
//     and tags filters are case-insensitive substrings. Case folding is Go's
//     strings.ToLower, done once when recording, so both databases agree.
package event
