package store

import (
	"cmp"
	"context"
	"database/sql"
	"encoding/json"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/postline/postline/internal/event"
	"github.com/postline/postline/internal/sending"
	"github.com/postline/postline/internal/suppression"
)

// stmtCache keeps the queue's statements prepared on SQLite's single writer
// connection. modernc compiles every statement it is handed, and compiling
// cost more than running for the queue's small statements: a fifth of the
// delivery benchmark's CPU before the cache. PostgreSQL needs none: pgx
// caches prepared statements per connection itself.
//
// Statements are prepared only outside transactions (warm): preparing
// needs the writer connection, which a transaction holds. Inside one, a
// statement not yet prepared simply runs unprepared.
type stmtCache struct {
	db *DB
	mu sync.Mutex
	m  map[string]*sql.Stmt
}

func newStmtCache(db *DB) *stmtCache { return &stmtCache{db: db, m: map[string]*sql.Stmt{}} }

// queueStmts are the statements warm prepares: all the queue's statements
// whose text does not depend on a batch's size.
var queueStmts = []string{insertSend, insertDelivery, claimDue, loadClaimedSQLite, completeDelivery, insertBounce,
	releaseDelivery, extendLease, insertEventOne, addCountOne, addTotalOne, addStatOne, insertTagOne, touchTagOne,
	addTagStatSQLite}

// warm prepares the queue's statements that are not prepared yet. Call it
// outside any transaction of this goroutine. Failures are left for the
// statements' use to report.
func (c *stmtCache) warm(ctx context.Context) {
	if c == nil || c.db.Dialect != SQLite {
		return
	}
	c.mu.Lock()
	var missing []string
	for _, q := range queueStmts {
		if c.m[q] == nil {
			missing = append(missing, q)
		}
	}
	c.mu.Unlock()
	// Prepare without holding mu: preparing waits for the writer, and a
	// transaction on it may be asking for a statement.
	for _, q := range missing {
		st, err := c.db.w.PrepareContext(ctx, q)
		if err != nil {
			return
		}
		c.mu.Lock()
		if c.m[q] == nil {
			c.m[q], st = st, nil
		}
		c.mu.Unlock()
		if st != nil { // another goroutine was first
			st.Close()
		}
	}
}

// stmt returns query prepared for q, or nil when q should run it directly.
func (c *stmtCache) stmt(ctx context.Context, q Querier, query string) *sql.Stmt {
	if c == nil || c.db.Dialect != SQLite {
		return nil
	}
	c.mu.Lock()
	st := c.m[query]
	c.mu.Unlock()
	if st == nil {
		return nil
	}
	switch tx := q.(type) {
	case *sql.Tx:
		return tx.StmtContext(ctx, st) // closed with the transaction; reuses the writer's preparation
	case boundTx:
		return tx.StmtContext(ctx, st)
	}
	if q == Querier(c.db.w) {
		return st
	}
	return nil
}

func (c *stmtCache) exec(ctx context.Context, q Querier, query string, args ...any) (sql.Result, error) {
	if st := c.stmt(ctx, q, query); st != nil {
		bctx := boundFor(ctx, q)
		res, err := st.ExecContext(bctx, args...)
		note(ctx, bctx, err)
		return res, err
	}
	return q.ExecContext(ctx, query, args...)
}

func (c *stmtCache) query(ctx context.Context, q Querier, query string, args ...any) (*sql.Rows, error) {
	if st := c.stmt(ctx, q, query); st != nil {
		bctx := boundFor(ctx, q)
		rows, err := st.QueryContext(bctx, args...)
		note(ctx, bctx, err)
		return rows, err
	}
	return q.QueryContext(ctx, query, args...)
}

func (c *stmtCache) queryRow(ctx context.Context, q Querier, query string, args ...any) *sql.Row {
	if st := c.stmt(ctx, q, query); st != nil {
		bctx := boundFor(ctx, q)
		row := st.QueryRowContext(bctx, args...)
		note(ctx, bctx, row.Err())
		return row
	}
	return q.QueryRowContext(ctx, query, args...)
}

const (
	insertSend = `INSERT INTO sends (domain_id, account_id, from_addr, from_name, reply_to, subject,
			text_body, html_body, headers, options, tags, created_at, raw, addressing, deliver_at)
			VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15) RETURNING id`
	insertDelivery = `INSERT INTO deliveries (send_id, domain_id, message_id, recipient, state,
				next_attempt_at, created_at, updated_at) VALUES ($1, $2, $3, $4, $5, $6, $7, $7) RETURNING id`
)

// EnqueueMany implements sending.Store.
func (s Sending) EnqueueMany(ctx context.Context, jobs []sending.EnqueueJob) error {
	if len(jobs) == 0 {
		return nil
	}
	headers := make([]string, len(jobs))
	for i, j := range jobs {
		h, err := json.Marshal(j.Send.Headers)
		if err != nil {
			return err
		}
		headers[i] = string(h)
	}
	if s.db.Dialect == Postgres {
		return s.enqueuePG(ctx, jobs, headers)
	}
	s.stmts.warm(ctx)
	return s.db.InTx(ctx, func(q Querier) error {
		if err := s.insertJobsEach(ctx, q, jobs, headers); err != nil {
			return err
		}
		return insertJobsRest(ctx, s.db, q, jobs)
	})
}

// enqueuePG takes the group's ids from the sequences first, in one round
// trip (sequences stand outside transactions: a failed group leaves gaps,
// as a rolled-back insert would), then sends every insert in one pipelined
// transaction: two round trips for a group of any size.
func (s Sending) enqueuePG(ctx context.Context, jobs []sending.EnqueueJob, headers []string) error {
	n := 0
	for _, j := range jobs {
		n += len(j.Deliveries)
	}
	sendIDs, deliveryIDs, err := s.db.ids.take(ctx, s.db.w, len(jobs), n)
	if err != nil {
		return err
	}
	return s.db.InPipeline(ctx, func(q Querier) error {
		if err := insertJobsPG(ctx, q, jobs, headers, sendIDs, deliveryIDs); err != nil {
			return err
		}
		return insertJobsRest(ctx, s.db, q, jobs)
	})
}

// insertJobsRest inserts the jobs' attachments and log entries, after
// their sends and deliveries.
func insertJobsRest(ctx context.Context, db *DB, q Querier, jobs []sending.EnqueueJob) error {
	var entries []event.Entry
	for _, j := range jobs {
		if err := insertAttachments(ctx, q, j.Send.ID, j.Attachments); err != nil {
			return err
		}
		entries = append(entries, j.Entries(j.Deliveries)...)
	}
	return NewEvents(db).In(q).Insert(ctx, entries)
}

// insertJobsEach inserts row by row: SQLite's way (prepared statements on
// an in-process engine).
func (s Sending) insertJobsEach(ctx context.Context, q Querier, jobs []sending.EnqueueJob, headers []string) error {
	for i, j := range jobs {
		snd := j.Send
		err := s.stmts.queryRow(ctx, q, insertSend, snd.DomainID, snd.AccountID, snd.From, snd.FromName, snd.ReplyTo,
			snd.Subject, snd.Text, snd.HTML, headers[i], snd.Options, snd.Tags, ms(snd.CreatedAt), rawOf(snd), addressingOf(snd),
			msPtr(snd.DeliverAt)).Scan(&snd.ID)
		if err != nil {
			return notFound(err, "send")
		}
		for k := range j.Deliveries {
			d := &j.Deliveries[k]
			d.SendID = snd.ID
			err := s.stmts.queryRow(ctx, q, insertDelivery, d.SendID, d.DomainID, d.MessageID, d.Recipient,
				sending.StatePending, ms(d.NextAttemptAt), ms(d.CreatedAt)).Scan(&d.ID)
			if err != nil {
				return notFound(err, "delivery")
			}
		}
	}
	return nil
}

// insertJobsPG inserts the sends and the deliveries with the ids given,
// one multi-row statement each.
func insertJobsPG(ctx context.Context, q Querier, jobs []sending.EnqueueJob, headers []string, sendIDs, deliveryIDs []int64) error {
	sends := make([][]any, len(jobs))
	var deliveries [][]any
	for i, j := range jobs {
		snd := j.Send
		snd.ID = sendIDs[i]
		sends[i] = []any{snd.ID, snd.DomainID, snd.AccountID, snd.From, snd.FromName, snd.ReplyTo, snd.Subject, snd.Text,
			snd.HTML, headers[i], snd.Options, snd.Tags, ms(snd.CreatedAt), rawOf(snd), addressingOf(snd), msPtr(snd.DeliverAt)}
		for k := range j.Deliveries {
			d := &j.Deliveries[k]
			d.SendID, d.ID = snd.ID, deliveryIDs[len(deliveries)]
			deliveries = append(deliveries, []any{d.ID, d.SendID, d.DomainID, d.MessageID, d.Recipient,
				sending.StatePending, ms(d.NextAttemptAt), ms(d.CreatedAt), ms(d.CreatedAt)})
		}
	}
	if err := insertValues(ctx, q, `INSERT INTO sends (id, domain_id, account_id, from_addr, from_name, reply_to, subject,
		text_body, html_body, headers, options, tags, created_at, raw, addressing, deliver_at) VALUES `, sends); err != nil {
		return notFound(err, "send")
	}
	if err := insertValues(ctx, q, `INSERT INTO deliveries (id, send_id, domain_id, message_id, recipient, state,
		next_attempt_at, created_at, updated_at) VALUES `, deliveries); err != nil {
		return notFound(err, "delivery")
	}
	return nil
}

// nextIDsPG takes sends ids and deliveries ids from their sequences in
// one statement.
func nextIDsPG(ctx context.Context, q Querier, sends, deliveries int) (sendIDs, deliveryIDs []int64, err error) {
	rows, err := q.QueryContext(ctx, `SELECT 0, nextval('sends_id_seq') FROM generate_series(1, $1)
		UNION ALL SELECT 1, nextval('deliveries_id_seq') FROM generate_series(1, $2)`, sends, deliveries)
	if err != nil {
		return nil, nil, notFound(err, "ids")
	}
	defer rows.Close()
	for rows.Next() {
		var seq, id int64
		if err := rows.Scan(&seq, &id); err != nil {
			return nil, nil, notFound(err, "ids")
		}
		if seq == 0 {
			sendIDs = append(sendIDs, id)
		} else {
			deliveryIDs = append(deliveryIDs, id)
		}
	}
	if err := rows.Err(); err != nil {
		return nil, nil, notFound(err, "ids")
	}
	if len(sendIDs) != sends || len(deliveryIDs) != deliveries {
		return nil, nil, notFound(sql.ErrNoRows, "ids")
	}
	return sendIDs, deliveryIDs, nil
}

// insertValues runs prefix with one ($1, ...) group per row, in chunks
// that stay below PostgreSQL's 65535 parameters.
func insertValues(ctx context.Context, q Querier, prefix string, rows [][]any) error {
	if len(rows) == 0 {
		return nil
	}
	per := max(1, 60000/len(rows[0]))
	for len(rows) > 0 {
		chunk := rows[:min(len(rows), per)]
		rows = rows[len(chunk):]
		var b strings.Builder
		b.WriteString(prefix)
		args := make([]any, 0, len(chunk)*len(chunk[0]))
		for i, r := range chunk {
			if i > 0 {
				b.WriteByte(',')
			}
			b.WriteByte('(')
			for c := range r {
				if c > 0 {
					b.WriteByte(',')
				}
				b.WriteString("$" + strconv.Itoa(len(args)+c+1))
			}
			b.WriteByte(')')
			args = append(args, r...)
		}
		if _, err := q.ExecContext(ctx, b.String(), args...); err != nil {
			return err
		}
	}
	return nil
}

const completeDelivery = `UPDATE deliveries SET state = $3, next_attempt_at = COALESCE($4, next_attempt_at),
			last_code = $5, last_message = $6, lease_owner = NULL, lease_until = NULL, updated_at = $7
			WHERE id = $1 AND lease_owner = $2 AND state = 'sending'`

const insertBounce = `INSERT INTO suppressions (domain_id, type, recipient_type, recipient, source, created_at, description)
				VALUES ($1, $2, $3, $4, $5, $6, $7) ON CONFLICT (domain_id, type, recipient) DO NOTHING`

// CompleteMany implements sending.Store. On SQLite the rows are updated
// one by one in id order; on PostgreSQL one UPDATE ... FROM (VALUES ...)
// writes them all. Bounces and entries follow in id order. Two batches
// share a row only after a lease was lost and the row claimed again; if
// that ever deadlocks, PostgreSQL aborts one and its worker writes the
// outcomes one by one (sending.Worker.complete).
func (s Sending) CompleteMany(ctx context.Context, owner string, cs []sending.Completion) ([]bool, error) {
	bounces := make([]*suppression.Entry, len(cs))
	for i, c := range cs {
		bounces[i] = c.Bounce
	}
	defer s.db.suppressionWrite(bounces...)()
	order := make([]int, len(cs))
	for i := range order {
		order[i] = i
	}
	slices.SortFunc(order, func(a, b int) int { return cmpInt(cs[a].ID, cs[b].ID) })
	var held []bool
	s.stmts.warm(ctx)
	err := s.db.InTx(ctx, func(q Querier) error {
		held = make([]bool, len(cs)) // a retried transaction starts afresh
		now := ms(time.Now())
		var err error
		if s.db.Dialect == Postgres && len(cs) > 1 {
			err = s.completeRowsPG(ctx, q, owner, cs, held, now)
		} else {
			err = s.completeEach(ctx, q, owner, cs, order, held, now)
		}
		if err != nil {
			return err
		}
		var entries []event.Entry
		var bounces []*suppression.Entry
		for _, i := range order {
			if !held[i] {
				continue // the lease was lost: someone else owns this attempt now
			}
			if b := cs[i].Bounce; b != nil {
				bounces = append(bounces, b)
			}
			entries = append(entries, cs[i].Entries...)
		}
		// In key order, so that two processes' groups lock suppression keys
		// in the same order and cannot deadlock on them.
		slices.SortFunc(bounces, func(a, b *suppression.Entry) int {
			return cmp.Or(cmpInt(a.DomainID, b.DomainID), strings.Compare(a.Recipient, b.Recipient))
		})
		for _, b := range bounces {
			if _, err := s.stmts.exec(ctx, q, insertBounce, b.DomainID, b.Type, b.RecipientType, b.Recipient, b.Source,
				ms(b.CreatedAt), b.Description); err != nil {
				return notFound(err, "suppression")
			}
		}
		return NewEvents(s.db).In(q).Insert(ctx, entries)
	})
	if err != nil {
		return nil, err
	}
	return held, nil
}

func nextArg(o sending.Outcome) any {
	if o.NextAttemptAt.IsZero() {
		return nil
	}
	return ms(o.NextAttemptAt)
}

func (s Sending) completeEach(ctx context.Context, q Querier, owner string, cs []sending.Completion, order []int,
	held []bool, now int64) error {
	for _, i := range order {
		c := cs[i]
		res, err := s.stmts.exec(ctx, q, completeDelivery, c.ID, owner, c.Outcome.State, nextArg(c.Outcome), c.Outcome.Code,
			c.Outcome.Message, now)
		if err != nil {
			return notFound(err, "delivery")
		}
		n, _ := res.RowsAffected()
		held[i] = n > 0
	}
	return nil
}

// completeRowsPG writes every outcome with one UPDATE ... FROM (VALUES ...)
// and learns which leases were held from what it returns.
func (s Sending) completeRowsPG(ctx context.Context, q Querier, owner string, cs []sending.Completion, held []bool,
	now int64) error {
	var b strings.Builder
	b.WriteString(`UPDATE deliveries d SET state = v.state, next_attempt_at = COALESCE(v.next, d.next_attempt_at),
		last_code = v.code, last_message = v.msg, lease_owner = NULL, lease_until = NULL, updated_at = $2 FROM (VALUES `)
	args := []any{owner, now}
	pos := make(map[int64]int, len(cs))
	for i, c := range cs {
		if i > 0 {
			b.WriteByte(',')
		}
		n := len(args)
		if i == 0 { // the first row's casts type the columns
			b.WriteString("($3::bigint,$4::text,$5::bigint,$6::integer,$7::text)")
		} else {
			b.WriteString("($" + strconv.Itoa(n+1) + ",$" + strconv.Itoa(n+2) + ",$" + strconv.Itoa(n+3) + ",$" +
				strconv.Itoa(n+4) + ",$" + strconv.Itoa(n+5) + ")")
		}
		args = append(args, c.ID, c.Outcome.State, nextArg(c.Outcome), c.Outcome.Code, c.Outcome.Message)
		pos[c.ID] = i
	}
	b.WriteString(`) AS v (id, state, next, code, msg) WHERE d.id = v.id AND d.lease_owner = $1 AND d.state = 'sending'
		RETURNING d.id`)
	rows, err := q.QueryContext(ctx, b.String(), args...)
	if err != nil {
		return notFound(err, "delivery")
	}
	ids, err := scanIDs(rows)
	if err != nil {
		return notFound(err, "delivery")
	}
	for _, id := range ids {
		held[pos[id]] = true
	}
	return nil
}

// LoadSends implements sending.Store with two queries, whatever the count.
func (s Sending) LoadSends(ctx context.Context, ids []int64) (map[int64]sending.StoredSend, error) {
	out := make(map[int64]sending.StoredSend, len(ids))
	if len(ids) == 0 {
		return out, nil
	}
	in, args := inList(ids)
	rows, err := s.db.rd.QueryContext(ctx, `SELECT id, domain_id, account_id, from_addr, from_name, reply_to, subject, text_body,
		html_body, headers, options, tags, processed, created_at, raw, addressing FROM sends WHERE id IN (`+in+`)`, args...)
	if err != nil {
		return nil, notFound(err, "sends")
	}
	defer rows.Close()
	for rows.Next() {
		var snd sending.Send
		var headers string
		var processed int
		var created int64
		var addressing string
		if err := rows.Scan(&snd.ID, &snd.DomainID, &snd.AccountID, &snd.From, &snd.FromName, &snd.ReplyTo, &snd.Subject,
			&snd.Text, &snd.HTML, &headers, &snd.Options, &snd.Tags, &processed, &created, &snd.Raw, &addressing); err != nil {
			return nil, notFound(err, "sends")
		}
		if err := parseAddressing(addressing, &snd); err != nil {
			return nil, err
		}
		snd.Processed, snd.CreatedAt = processed != 0, fromMS(created)
		if err := json.Unmarshal([]byte(headers), &snd.Headers); err != nil {
			return nil, err
		}
		out[snd.ID] = sending.StoredSend{Send: snd}
	}
	if err := rows.Err(); err != nil {
		return nil, notFound(err, "sends")
	}
	rows.Close()
	arows, err := s.db.rd.QueryContext(ctx, `SELECT send_id, filename, content_type, data, content_id FROM send_attachments
		WHERE send_id IN (`+in+`) ORDER BY send_id, idx`, args...)
	if err != nil {
		return nil, notFound(err, "attachments")
	}
	defer arows.Close()
	for arows.Next() {
		var id int64
		var a sending.Attachment
		if err := arows.Scan(&id, &a.Filename, &a.ContentType, &a.Data, &a.ContentID); err != nil {
			return nil, notFound(err, "attachments")
		}
		if st, ok := out[id]; ok {
			st.Attachments = append(st.Attachments, a)
			out[id] = st
		}
	}
	return out, notFound(arows.Err(), "attachments")
}

// inList is "$1,$2,..." for ids, and ids as arguments.
func inList(ids []int64) (string, []any) {
	var b strings.Builder
	args := make([]any, len(ids))
	for i, id := range ids {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteString("$" + strconv.Itoa(i+1))
		args[i] = id
	}
	return b.String(), args
}

// rawOf is the send's raw message for its NOT NULL column (empty, not
// NULL, for API sends).
func rawOf(snd *sending.Send) []byte {
	if snd.Raw == nil {
		return []byte{}
	}
	return snd.Raw
}

// addressingOf is the JSON of the send's visible recipients ("" when each
// copy shows only its recipient).
func addressingOf(snd *sending.Send) string {
	if len(snd.Addressing.To) == 0 && len(snd.Addressing.Cc) == 0 {
		return ""
	}
	b, _ := json.Marshal(snd.Addressing) // plain structs of strings: cannot fail
	return string(b)
}

func parseAddressing(v string, snd *sending.Send) error {
	if v == "" {
		return nil
	}
	return json.Unmarshal([]byte(v), &snd.Addressing)
}
