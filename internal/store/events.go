package store

import (
	"context"
	"database/sql"
	"encoding/json"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/postline/postline/internal/event"
)

// Events implements event.Store. Bound to a transaction with In, it
// records inside the caller's transaction (the sending path records a
// message's queued events with the message).
type Events struct {
	db *DB
	q  Querier // the caller's transaction; nil: each Insert makes its own
}

var _ event.Store = Events{}

// NewEvents returns the event store.
func NewEvents(db *DB) Events { return Events{db: db} }

// In returns the store bound to q, a transaction from DB.InTx. Its wake-up
// must be published after that transaction commits (event.Service.RecordTx).
func (e Events) In(q Querier) Events { e.q = q; return e }

// eventsChannel is the PostgreSQL channel that carries the domain id of
// every committed insert, so that followers in every process wake; one per
// schema, as channels are database-wide.
func (db *DB) eventsChannel() string { return "postline_events_" + strconv.FormatInt(db.ns, 10) }

// lockIDBits is how many low bits of an event-ordering lock key hold the id
// bound; the bits above hold the schema's ns (DB.ns), so a bound announced
// in one schema never holds back followers in another.
const lockIDBits = 47

const hourMS = int64(time.Hour / time.Millisecond)

// insertChunk rows per INSERT on PostgreSQL: 13 parameters each stays far
// below its limit of 65535 while amortising the round trip.
const insertChunk = 1000

const eventCols = `id, domain_id, message_id, event_type, sender, recipient, subject, tags, created_at, details`

func (e Events) reader() Querier {
	if e.q != nil {
		return e.q
	}
	return e.db.rd
}

// Insert implements event.Store.
//
// The ordering problem: a follower reads "id > last", but ids are handed
// out when rows are inserted, not when they commit. A transaction holding
// id 10 may commit after one holding id 11; a follower that already read
// 11 would never see 10. SQLite's single writer commits transactions one
// at a time, so ids become visible in order. On PostgreSQL, before taking
// any id, Insert announces a bound below all of its ids by holding a
// shared, transaction-scoped advisory lock keyed by the sequence's last
// value (in the low lockIDBits bits; the schema's ns above them). Bounds never reports an id above the lowest announced bound, so a
// follower stops short of any id that may still commit and continues once
// the transaction ends (its NOTIFY, sent once it committed, wakes
// everyone: eventnotify.go). Writers never wait for each other: a shared lock does not
// conflict with itself. (The alternative, serialising a domain's inserts
// with an exclusive lock held to commit, capped a busy domain at one
// commit at a time: 5x fewer single-entry transactions per second with 8
// writers in our measurement.)
func (e Events) Insert(ctx context.Context, entries []event.Entry) error {
	if len(entries) == 0 {
		return nil
	}
	if e.q == nil {
		e.db.stmts.warm(ctx)
		return e.db.InTx(ctx, func(q Querier) error { return e.In(q).Insert(ctx, entries) })
	}
	if e.db.Dialect == Postgres {
		// last_value - 1: with is_called false the next id is last_value.
		if _, err := e.q.ExecContext(ctx, `SELECT pg_advisory_xact_lock_shared(($1::bigint << `+strconv.Itoa(lockIDBits)+`) | (last_value - 1))
			FROM events_id_seq`, e.db.ns); err != nil {
			return notFound(err, "event id bound")
		}
		for i := 0; i < len(entries); i += insertChunk {
			if err := e.insertRows(ctx, entries[i:min(i+insertChunk, len(entries))]); err != nil {
				return err
			}
		}
	} else if err := e.insertEach(ctx, entries); err != nil {
		return err
	}
	if err := e.addCounts(ctx, entries); err != nil {
		return err
	}
	if e.db.Dialect == Postgres {
		return e.notify(ctx, entries)
	}
	return nil
}

const insertEvent = `INSERT INTO events (domain_id, message_id, event_type, sender, sender_lc, recipient, recipient_lc,
	subject, subject_lc, tags, tags_lc, created_at, details) VALUES `

// eventArgs appends en's 13 column values.
func eventArgs(args []any, en event.Entry) []any {
	var tags, tagsLC any
	if en.Tags != "" {
		tags, tagsLC = en.Tags, event.Fold(en.Tags)
	}
	return append(args, en.DomainID, en.MessageID, string(en.Type), en.Sender, event.Fold(en.Sender),
		en.Recipient, event.Fold(en.Recipient), en.Subject, event.Fold(en.Subject), tags, tagsLC,
		ms(en.CreatedAt), string(en.Details))
}

// SQLite's single-row statements, prepared once on the writer (queueStmts)
// so that recording costs no SQL parsing.
const (
	insertEventOne = insertEvent + `($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13)`
	addCountOne    = `INSERT INTO event_counts (domain_id, hour, event_type, stripe, n) VALUES ($1, $2, $3, 0, $4)
		ON CONFLICT (domain_id, hour, event_type, stripe) DO UPDATE SET n = event_counts.n + excluded.n`
	addTotalOne = `INSERT INTO event_totals (domain_id, event_type, stripe, n) VALUES ($1, $2, 0, $3)
		ON CONFLICT (domain_id, event_type, stripe) DO UPDATE SET n = event_totals.n + excluded.n`
)

// execOne runs one of the statements above: the writer's prepared copy
// when there is one, else prepared for this transaction, else directly.
func (e Events) execOne(ctx context.Context, query string) func(args ...any) error {
	if st := e.db.stmts.stmt(ctx, e.q, query); st != nil {
		return func(args ...any) error { _, err := st.ExecContext(ctx, args...); return err }
	}
	return func(args ...any) error { _, err := e.q.ExecContext(ctx, query, args...); return err }
}

// insertEach is SQLite's way: one prepared single-row statement executed
// per entry. Inside one transaction that is all in-process calls, and it
// measured several times faster than multi-row VALUES with modernc, whose
// cost per statement grows faster than its row count.
func (e Events) insertEach(ctx context.Context, rows []event.Entry) error {
	exec := e.execOne(ctx, insertEventOne)
	args := make([]any, 0, 13)
	for _, en := range rows {
		if err := exec(eventArgs(args[:0], en)...); err != nil {
			return notFound(err, "events")
		}
	}
	return nil
}

// insertRows is PostgreSQL's way: one multi-row INSERT per chunk, so a
// batch costs a round trip per thousand rows rather than per row.
func (e Events) insertRows(ctx context.Context, rows []event.Entry) error {
	const cols = 13
	var b strings.Builder
	b.Grow(120 + len(rows)*cols*7)
	b.WriteString(insertEvent)
	args := make([]any, 0, len(rows)*cols)
	for i, en := range rows {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteByte('(')
		for c := 1; c <= cols; c++ {
			if c > 1 {
				b.WriteByte(',')
			}
			b.WriteByte('$')
			b.WriteString(strconv.Itoa(i*cols + c))
		}
		b.WriteByte(')')
		args = eventArgs(args, en)
	}
	_, err := e.q.ExecContext(ctx, b.String(), args...)
	return notFound(err, "events")
}

type countKey struct {
	domain, hour int64
	typ          event.Type
}

// hourOf is the start of created's hour in Unix ms (floor, also before 1970).
func hourOf(created int64) int64 {
	h := created / hourMS * hourMS
	if h > created {
		h -= hourMS
	}
	return h
}

// addCounts adds entries to the hourly counts and the all-time totals,
// one upsert each for the batch, and to Mailgun's stat counts (stats.go).
func (e Events) addCounts(ctx context.Context, entries []event.Entry) error {
	agg := map[countKey]int64{}
	for _, en := range entries {
		agg[countKey{en.DomainID, hourOf(ms(en.CreatedAt)), en.Type}]++
	}
	if err := e.upsertCounts(ctx, agg); err != nil {
		return err
	}
	totals := map[countKey]int64{}
	for k, n := range agg {
		totals[countKey{domain: k.domain, typ: k.typ}] += n
	}
	if err := e.upsertTotals(ctx, totals); err != nil {
		return err
	}
	return e.addStats(ctx, entries)
}

// sortedKeys orders keys by domain, hour, type: a fixed order keeps two
// transactions sharing a stripe from taking the same row locks in crossed
// orders.
func sortedKeys(agg map[countKey]int64) []countKey {
	keys := make([]countKey, 0, len(agg))
	for k := range agg {
		keys = append(keys, k)
	}
	slices.SortFunc(keys, func(a, b countKey) int {
		if a.domain != b.domain {
			return cmpInt(a.domain, b.domain)
		}
		if a.hour != b.hour {
			return cmpInt(a.hour, b.hour)
		}
		return strings.Compare(string(a.typ), string(b.typ))
	})
	return keys
}

// upsertCounts adds agg to event_counts (hour, type) rows of this
// connection's stripe.
func (e Events) upsertCounts(ctx context.Context, agg map[countKey]int64) error {
	keys := sortedKeys(agg)
	if e.db.Dialect == SQLite {
		exec := e.execOne(ctx, addCountOne)
		for _, k := range keys {
			if err := exec(k.domain, k.hour, string(k.typ), agg[k]); err != nil {
				return notFound(err, "event counts")
			}
		}
		return nil
	}
	for len(keys) > 0 {
		chunk := keys[:min(len(keys), insertChunk)]
		keys = keys[len(chunk):]
		var b strings.Builder
		b.WriteString(`INSERT INTO event_counts (domain_id, hour, event_type, stripe, n) VALUES `)
		args := make([]any, 0, len(chunk)*4)
		for i, k := range chunk {
			if i > 0 {
				b.WriteByte(',')
			}
			n := i * 4
			b.WriteString("($" + strconv.Itoa(n+1) + ",$" + strconv.Itoa(n+2) + ",$" + strconv.Itoa(n+3) + "," + e.stripe() + ",$" + strconv.Itoa(n+4) + ")")
			args = append(args, k.domain, k.hour, string(k.typ), agg[k])
		}
		b.WriteString(` ON CONFLICT (domain_id, hour, event_type, stripe) DO UPDATE SET n = event_counts.n + excluded.n`)
		if _, err := e.q.ExecContext(ctx, b.String(), args...); err != nil {
			return notFound(err, "event counts")
		}
	}
	return nil
}

// upsertTotals adds totals (keys without hours) to event_totals; a batch
// holds at most a few domains times eleven types, so one statement.
func (e Events) upsertTotals(ctx context.Context, totals map[countKey]int64) error {
	keys := sortedKeys(totals)
	if e.db.Dialect == SQLite {
		exec := e.execOne(ctx, addTotalOne)
		for _, k := range keys {
			if err := exec(k.domain, string(k.typ), totals[k]); err != nil {
				return notFound(err, "event totals")
			}
		}
		return nil
	}
	if len(keys) == 0 {
		return nil
	}
	var b strings.Builder
	b.WriteString(`INSERT INTO event_totals (domain_id, event_type, stripe, n) VALUES `)
	args := make([]any, 0, len(keys)*3)
	for i, k := range keys {
		if i > 0 {
			b.WriteByte(',')
		}
		n := i * 3
		b.WriteString("($" + strconv.Itoa(n+1) + ",$" + strconv.Itoa(n+2) + "," + e.stripe() + ",$" + strconv.Itoa(n+3) + ")")
		args = append(args, k.domain, string(k.typ), totals[k])
	}
	b.WriteString(` ON CONFLICT (domain_id, event_type, stripe) DO UPDATE SET n = event_totals.n + excluded.n`)
	_, err := e.q.ExecContext(ctx, b.String(), args...)
	return notFound(err, "event totals")
}

// stripe is the event_counts stripe of this connection (see 00003_events.sql).
func (e Events) stripe() string {
	if e.db.Dialect == Postgres {
		return "pg_backend_pid() % 16"
	}
	return "0"
}

func cmpInt(a, b int64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// where renders f's conditions (not Limit, Offset, Order) with $1.. args.
func (e Events) where(f event.Filter) (string, []any) {
	var b strings.Builder
	b.WriteString("domain_id = $1")
	args := []any{f.DomainID}
	add := func(cond string, v any) {
		args = append(args, v)
		b.WriteString(" AND ")
		b.WriteString(strings.Replace(cond, "?", "$"+strconv.Itoa(len(args)), 1))
	}
	if !f.Start.IsZero() {
		add("created_at >= ?", ms(f.Start))
	}
	if !f.End.IsZero() {
		add("created_at <= ?", ms(f.End))
	}
	if f.Type != "" {
		add("event_type = ?", string(f.Type))
	}
	if f.AnyOf != 0 {
		marks := make([]string, 0, len(f.AnyOf.Types()))
		for _, t := range f.AnyOf.Types() {
			args = append(args, string(t))
			marks = append(marks, "$"+strconv.Itoa(len(args)))
		}
		b.WriteString(" AND event_type IN (" + strings.Join(marks, ",") + ")")
	}
	if f.Sender != "" {
		add("sender_lc = ?", event.Fold(f.Sender))
	}
	if f.Recipient != "" {
		add("recipient_lc = ?", event.Fold(f.Recipient))
	}
	if f.MessageID != "" {
		add("message_id = ?", f.MessageID)
	}
	for _, sub := range [...]struct{ col, v string }{{"subject_lc", f.Subject}, {"tags_lc", f.Tags}} {
		col, v := sub.col, sub.v
		if v == "" {
			continue
		}
		if e.db.Dialect == Postgres {
			// LIKE, not strpos: the trigram index serves LIKE '%...%'.
			add(col+` LIKE ? ESCAPE '\'`, likePattern(event.Fold(v)))
		} else {
			add("instr("+col+", ?) > 0", event.Fold(v))
		}
	}
	if f.AfterID > 0 {
		add("id > ?", f.AfterID)
	}
	if f.UpToID > 0 {
		add("id <= ?", f.UpToID)
	}
	return b.String(), args
}

// List implements event.Store.
func (e Events) List(ctx context.Context, f event.Filter) ([]event.Entry, error) {
	where, args := e.where(f)
	q := `SELECT ` + eventCols + ` FROM events WHERE ` + where
	switch f.Order {
	case event.OldestFirst:
		q += ` ORDER BY id`
	case event.NewestIDFirst:
		q += ` ORDER BY id DESC`
	default:
		q += ` ORDER BY created_at DESC, id DESC`
	}
	args = append(args, f.Limit)
	q += ` LIMIT $` + strconv.Itoa(len(args)) + ` + 0`
	if f.Offset > 0 {
		args = append(args, f.Offset)
		q += ` OFFSET $` + strconv.Itoa(len(args))
	}
	rows, err := e.reader().QueryContext(ctx, q, args...)
	if err != nil {
		return nil, notFound(err, "events")
	}
	defer rows.Close()
	out := make([]event.Entry, 0, min(f.Limit, event.MaxBatch))
	for rows.Next() {
		var en event.Entry
		var tags sql.NullString
		var created int64
		var details []byte
		if err := rows.Scan(&en.ID, &en.DomainID, &en.MessageID, &en.Type, &en.Sender, &en.Recipient,
			&en.Subject, &tags, &created, &details); err != nil {
			return nil, notFound(err, "events")
		}
		en.Tags, en.CreatedAt, en.Details = tags.String, fromMS(created), json.RawMessage(details)
		out = append(out, en)
	}
	return out, notFound(rows.Err(), "events")
}
