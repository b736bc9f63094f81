package store

import (
	"context"
	"database/sql"
	"encoding/json"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/postline/postline/internal/event"
	"github.com/postline/postline/internal/mailgun"
	"github.com/postline/postline/internal/stats"
)

// Stats implements stats.Store over stat_counts and tags (00032). The
// counts and the tags' use are written by Events as it records entries
// (addStats), in the recording transaction.
type Stats struct {
	db *DB
}

var _ stats.Store = Stats{}

// NewStats returns the stats store.
func NewStats(db *DB) Stats { return Stats{db: db} }

const dayMS = 24 * hourMS

// Counts implements stats.Store.
func (s Stats) Counts(ctx context.Context, domainIDs []int64, tag string, from, to time.Time, daily bool) (map[time.Time]map[string]int64, error) {
	if len(domainIDs) == 0 {
		return map[time.Time]map[string]int64{}, nil
	}
	bucket := "hour"
	if daily {
		bucket = "(hour / " + strconv.FormatInt(dayMS, 10) + ") * " + strconv.FormatInt(dayMS, 10)
	}
	args := []any{tag, hourOf(ms(from)), hourOf(ms(to))}
	marks := make([]string, len(domainIDs))
	for i, id := range domainIDs {
		args = append(args, id)
		marks[i] = "$" + strconv.Itoa(len(args))
	}
	rows, err := s.db.rd.QueryContext(ctx, `SELECT `+bucket+` AS b, stat, CAST(SUM(n) AS BIGINT) FROM stat_counts
		WHERE domain_id IN (`+strings.Join(marks, ",")+`) AND tag = $1 AND hour >= $2 AND hour < $3
		GROUP BY b, stat`, args...)
	if err != nil {
		return nil, notFound(err, "stat counts")
	}
	defer rows.Close()
	out := map[time.Time]map[string]int64{}
	for rows.Next() {
		var b, n int64
		var stat string
		if err := rows.Scan(&b, &stat, &n); err != nil {
			return nil, notFound(err, "stat counts")
		}
		t := fromMS(b)
		if out[t] == nil {
			out[t] = map[string]int64{}
		}
		out[t][stat] += n
	}
	return out, notFound(rows.Err(), "stat counts")
}

const tagCols = `tag, description, first_seen, last_seen`

func scanTag(row interface{ Scan(...any) error }) (stats.Tag, error) {
	var t stats.Tag
	var first, last int64
	err := row.Scan(&t.Name, &t.Description, &first, &last)
	t.FirstSeen, t.LastSeen = fromMS(first), fromMS(last)
	return t, err
}

// ListTags implements stats.Store: keyset pages by name.
func (s Stats) ListTags(ctx context.Context, domainID int64, p stats.TagPage) ([]stats.Tag, error) {
	where, args := "domain_id = $1", []any{domainID}
	add := func(cond string, v any) {
		args = append(args, v)
		where += " AND " + strings.Replace(cond, "?", "$"+strconv.Itoa(len(args)), 1)
	}
	if p.Prefix != "" {
		add("substr(tag, 1, "+strconv.Itoa(utf8.RuneCountInString(p.Prefix))+") = ?", p.Prefix)
	}
	order := "tag"
	switch p.Dir {
	case stats.Next:
		add("tag > ?", p.Pivot)
	case stats.Prev:
		add("tag < ?", p.Pivot)
		order = "tag DESC"
	case stats.Last:
		order = "tag DESC"
	}
	args = append(args, p.Limit)
	rows, err := s.db.rd.QueryContext(ctx, `SELECT `+tagCols+` FROM tags WHERE `+where+` ORDER BY `+order+
		` LIMIT $`+strconv.Itoa(len(args))+` + 0`, args...)
	if err != nil {
		return nil, notFound(err, "tags")
	}
	defer rows.Close()
	out := []stats.Tag{}
	for rows.Next() {
		t, err := scanTag(rows)
		if err != nil {
			return nil, notFound(err, "tags")
		}
		out = append(out, t)
	}
	if p.Dir == stats.Prev || p.Dir == stats.Last {
		slices.Reverse(out)
	}
	return out, notFound(rows.Err(), "tags")
}

// Tag implements stats.Store.
func (s Stats) Tag(ctx context.Context, domainID int64, name string) (stats.Tag, error) {
	t, err := scanTag(s.db.rd.QueryRowContext(ctx, `SELECT `+tagCols+` FROM tags WHERE domain_id = $1 AND tag = $2`, domainID, name))
	return t, notFound(err, "tag")
}

// DescribeTag implements stats.Store.
func (s Stats) DescribeTag(ctx context.Context, domainID int64, name, description string) error {
	return exec1(ctx, s.db.w, "tag", `UPDATE tags SET description = $3 WHERE domain_id = $1 AND tag = $2`, domainID, name, description)
}

// DeleteTag implements stats.Store: the tag and its counts, together.
// Its place is free at once (forgetTagRoom).
func (s Stats) DeleteTag(ctx context.Context, domainID int64, name string) error {
	defer s.db.forgetTagRoom(domainID)
	return s.db.InTx(ctx, func(q Querier) error {
		if err := exec1(ctx, q, "tag", `DELETE FROM tags WHERE domain_id = $1 AND tag = $2`, domainID, name); err != nil {
			return err
		}
		_, err := q.ExecContext(ctx, `DELETE FROM stat_counts WHERE domain_id = $1 AND tag = $2`, domainID, name)
		return notFound(err, "stat counts")
	})
}

// statKey is one stat_counts row of a batch, before the stripe.
type statKey struct {
	domain int64
	tag    string
	hour   int64
	stat   string
}

// tagRef is one of a domain's tags.
type tagRef struct {
	domain int64
	tag    string
}

// tagUse is a tag's first and last use in a batch (Unix ms).
type tagUse struct{ first, last int64 }

// addStats adds entries to the stat counts of their domains and of their
// tags (stats.TagsOf) that are tracked or can be: a tag new to a domain
// is tracked while the domain has fewer than stats.MaxTagsPerDomain.
// Writes only, as Insert: the sending path records inside a pipelined
// transaction (InPipeline), which cannot read, so each statement decides
// in SQL (a tag's counts are added from its row, when it has one).
func (e Events) addStats(ctx context.Context, entries []event.Entry) error {
	domains, tags := map[statKey]int64{}, map[statKey]int64{}
	uses := map[tagRef]tagUse{}
	for _, en := range entries {
		stat := mailgun.StatKey(en)
		if stat == "" {
			continue
		}
		at := ms(en.CreatedAt)
		h := hourOf(at)
		domains[statKey{en.DomainID, "", h, stat}]++
		for _, t := range stats.TagsOf(en.Tags) {
			r := tagRef{en.DomainID, t}
			u, ok := uses[r]
			if !ok {
				u = tagUse{at, at}
			}
			uses[r] = tagUse{min(u.first, at), max(u.last, at)}
			tags[statKey{en.DomainID, t, h, stat}]++
		}
	}
	if err := e.trackTags(ctx, uses); err != nil {
		return err
	}
	if err := e.upsertStats(ctx, domains); err != nil {
		return err
	}
	return e.upsertTagStats(ctx, tags)
}

// The statements of tags and their counts, one row each (prepared once
// on SQLite: queueStmts). Parameters are cast so that PostgreSQL knows
// their types where they are only selected.
const (
	// insertTagOne adds a tag the domain does not have while it has
	// fewer than $5 (CASE: the count only for a new tag).
	insertTagOne = `INSERT INTO tags (domain_id, tag, description, first_seen, last_seen)
		SELECT CAST($1 AS BIGINT), CAST($2 AS TEXT), '', CAST($3 AS BIGINT), CAST($4 AS BIGINT)
		WHERE CASE WHEN EXISTS (SELECT 1 FROM tags WHERE domain_id = $1 AND tag = $2) THEN 1 = 0
			ELSE (SELECT count(*) FROM tags WHERE domain_id = $1) < $5 END
		ON CONFLICT (domain_id, tag) DO NOTHING`
	// touchTagOne moves last_seen to $3 when it is at or before $4.
	touchTagOne = `UPDATE tags SET last_seen = $3 WHERE domain_id = $1 AND tag = $2 AND last_seen <= $4`
	// addTagStatSQLite adds to a tracked tag's counts (from its row: none
	// for a tag not tracked).
	addTagStatSQLite = `INSERT INTO stat_counts (domain_id, tag, hour, stat, stripe, n)
		SELECT domain_id, tag, CAST($3 AS BIGINT), CAST($4 AS TEXT), 0, CAST($5 AS BIGINT) FROM tags WHERE domain_id = $1 AND tag = $2
		ON CONFLICT (domain_id, tag, hour, stat, stripe) DO UPDATE SET n = stat_counts.n + excluded.n`
	// addTagStatPostgres is addTagStatSQLite in this connection's stripe.
	// FOR KEY SHARE keeps the tag from being deleted (DeleteTag,
	// retention) until this transaction ends, so a deleted tag's counts
	// never come back, without conflicting with another transaction's
	// update of last_seen.
	addTagStatPostgres = `INSERT INTO stat_counts (domain_id, tag, hour, stat, stripe, n)
		SELECT domain_id, tag, CAST($3 AS BIGINT), CAST($4 AS TEXT), pg_backend_pid() % 16, CAST($5 AS BIGINT)
		FROM tags WHERE domain_id = $1 AND tag = $2 FOR KEY SHARE
		ON CONFLICT (domain_id, tag, hour, stat, stripe) DO UPDATE SET n = stat_counts.n + excluded.n`
)

// trackTags adds the tags a domain does not have yet (within the bound)
// and moves the last use of the others once it is stats.LastSeenStep
// newer: a busy tag's row is written once a minute, not by every
// recording transaction. The domain's rows among the tags are read first,
// on the pool (knownTags), so that a known tag costs no statement until
// its last use is to move, and a full domain's new tags none (hasTagRoom).
// Rows are written in (domain, tag) order, as the counts are, so that two
// transactions never wait on each other's rows crosswise.
func (e Events) trackTags(ctx context.Context, uses map[tagRef]tagUse) error {
	refs := make([]tagRef, 0, len(uses))
	for r := range uses {
		refs = append(refs, r)
	}
	slices.SortFunc(refs, func(a, b tagRef) int {
		if a.domain != b.domain {
			return cmpInt(a.domain, b.domain)
		}
		return strings.Compare(a.tag, b.tag)
	})
	insert, touch := e.execOne(ctx, insertTagOne), e.execOne(ctx, touchTagOne)
	step := int64(stats.LastSeenStep / time.Millisecond)
	for len(refs) > 0 {
		n := 1
		for n < len(refs) && refs[n].domain == refs[0].domain {
			n++
		}
		domain, names := refs[0].domain, make([]string, n)
		for i, r := range refs[:n] {
			names[i] = r.tag
		}
		known, err := e.knownTags(ctx, domain, names)
		if err != nil {
			return notFound(err, "tags")
		}
		room, counted := true, false
		for _, r := range refs[:n] {
			u := uses[r]
			if last, ok := known[r.tag]; ok {
				if last > u.last-step {
					continue // recent enough
				}
			} else {
				if !counted {
					if room, err = e.db.hasTagRoom(ctx, e.tagReader(), domain); err != nil {
						return notFound(err, "tags")
					}
					counted = true
				}
				if !room {
					continue // a full domain's new tag is not tracked
				}
				if err := insert(r.domain, r.tag, u.first, u.last, stats.MaxTagsPerDomain); err != nil {
					return notFound(err, "tags")
				}
			}
			// A tag just added has last_seen u.last: nothing to move.
			if err := touch(r.domain, r.tag, u.last, u.last-step); err != nil {
				return notFound(err, "tags")
			}
		}
		refs = refs[n:]
	}
	return nil
}

// tagReader is where trackTags reads: the recording transaction, or the
// pool when that is a pipeline, which cannot read and holds no connection
// while it is built (a transaction holds one: reading on the pool from as
// many transactions as the pool has connections would wait forever).
func (e Events) tagReader() Querier {
	if _, ok := e.q.(*pipeline); ok {
		return e.db.rd
	}
	return e.q
}

// knownTags returns the last use of the domain's tags among names, read
// with tagReader. A tag may be added or deleted meanwhile: the statements
// that write decide in SQL. One probe of the key per name: PostgreSQL's
// generic plan of "tag = ANY($2)" read all of a domain's tags (4,000 rows
// at the bound) and filtered them.
func (e Events) knownTags(ctx context.Context, domainID int64, names []string) (map[string]int64, error) {
	query, list := `SELECT n.tag, (SELECT t.last_seen FROM tags t WHERE t.domain_id = $1 AND t.tag = n.tag)
		FROM unnest($2::text[]) AS n(tag)`, any(names)
	if e.db.Dialect == SQLite {
		b, _ := json.Marshal(names)
		query, list = `SELECT n.value, (SELECT t.last_seen FROM tags t WHERE t.domain_id = $1 AND t.tag = n.value)
		FROM json_each($2) AS n`, string(b)
	}
	rows, err := e.tagReader().QueryContext(ctx, query, domainID, list)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	out := make(map[string]int64, len(names))
	for rows.Next() {
		var tag string
		var last sql.NullInt64
		if err := rows.Scan(&tag, &last); err != nil {
			return nil, err
		}
		if last.Valid {
			out[tag] = last.Int64
		}
	}
	return out, rows.Err()
}

// upsertTagStats adds agg (keys with tags) to the tracked tags' counts,
// in key order.
func (e Events) upsertTagStats(ctx context.Context, agg map[statKey]int64) error {
	query := addTagStatSQLite
	if e.db.Dialect == Postgres {
		query = addTagStatPostgres
	}
	exec := e.execOne(ctx, query)
	for _, k := range sortedStatKeys(agg) {
		if err := exec(k.domain, k.tag, k.hour, k.stat, agg[k]); err != nil {
			return notFound(err, "stat counts")
		}
	}
	return nil
}

func sortedStatKeys(agg map[statKey]int64) []statKey {
	keys := make([]statKey, 0, len(agg))
	for k := range agg {
		keys = append(keys, k)
	}
	slices.SortFunc(keys, func(a, b statKey) int {
		switch {
		case a.domain != b.domain:
			return cmpInt(a.domain, b.domain)
		case a.tag != b.tag:
			return strings.Compare(a.tag, b.tag)
		case a.hour != b.hour:
			return cmpInt(a.hour, b.hour)
		}
		return strings.Compare(a.stat, b.stat)
	})
	return keys
}

// addStatOne is SQLite's single-row upsert of a domain's count, prepared
// once (queueStmts).
const addStatOne = `INSERT INTO stat_counts (domain_id, tag, hour, stat, stripe, n) VALUES ($1, $2, $3, $4, 0, $5)
	ON CONFLICT (domain_id, tag, hour, stat, stripe) DO UPDATE SET n = stat_counts.n + excluded.n`

// upsertStats adds agg (the domains' keys, tag "") to this connection's
// stripe of stat_counts, in key order (see sortedKeys).
func (e Events) upsertStats(ctx context.Context, agg map[statKey]int64) error {
	keys := sortedStatKeys(agg)
	if e.db.Dialect == SQLite {
		exec := e.execOne(ctx, addStatOne)
		for _, k := range keys {
			if err := exec(k.domain, k.tag, k.hour, k.stat, agg[k]); err != nil {
				return notFound(err, "stat counts")
			}
		}
		return nil
	}
	const cols = 5
	for len(keys) > 0 {
		chunk := keys[:min(len(keys), insertChunk)]
		keys = keys[len(chunk):]
		var b strings.Builder
		b.WriteString(`INSERT INTO stat_counts (domain_id, tag, hour, stat, stripe, n) VALUES `)
		args := make([]any, 0, len(chunk)*cols)
		for i, k := range chunk {
			if i > 0 {
				b.WriteByte(',')
			}
			n := i * cols
			p := func(j int) string { return "$" + strconv.Itoa(n+j) }
			b.WriteString("(" + p(1) + "," + p(2) + "," + p(3) + "," + p(4) + "," + e.stripe() + "," + p(5) + ")")
			args = append(args, k.domain, k.tag, k.hour, k.stat, agg[k])
		}
		b.WriteString(` ON CONFLICT (domain_id, tag, hour, stat, stripe) DO UPDATE SET n = stat_counts.n + excluded.n`)
		if _, err := e.q.ExecContext(ctx, b.String(), args...); err != nil {
			return notFound(err, "stat counts")
		}
	}
	return nil
}

// pruneStats deletes the stat counts of hours wholly before cut and the
// tags not used since cut with their counts, in batches: statistics are
// kept as long as the log.
func (e Events) pruneStats(ctx context.Context, cut int64, batch int) error {
	for {
		if err := ctx.Err(); err != nil {
			return err
		}
		res, err := e.db.w.ExecContext(ctx, `DELETE FROM stat_counts WHERE (domain_id, tag, hour, stat, stripe) IN
			(SELECT domain_id, tag, hour, stat, stripe FROM stat_counts WHERE hour < $1 LIMIT $2 + 0)`, hourOf(cut), batch)
		if err != nil {
			return notFound(err, "stat counts")
		}
		if n, _ := res.RowsAffected(); n < int64(batch) {
			break
		}
	}
	for {
		if err := ctx.Err(); err != nil {
			return err
		}
		n, err := e.pruneTags(ctx, cut, batch)
		if err != nil || n < batch {
			return err
		}
	}
}

// pruneTags deletes up to batch tags unused since cut, with their counts.
func (e Events) pruneTags(ctx context.Context, cut int64, batch int) (int, error) {
	var gone []tagRef
	err := e.db.InTx(ctx, func(q Querier) error {
		gone = gone[:0]
		rows, err := q.QueryContext(ctx, `DELETE FROM tags WHERE (domain_id, tag) IN
			(SELECT domain_id, tag FROM tags WHERE last_seen < $1 LIMIT $2 + 0) RETURNING domain_id, tag`, cut, batch)
		if err != nil {
			return err
		}
		for rows.Next() {
			var r tagRef
			if err := rows.Scan(&r.domain, &r.tag); err != nil {
				rows.Close()
				return err
			}
			gone = append(gone, r)
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			return err
		}
		for _, r := range gone {
			if _, err := q.ExecContext(ctx, `DELETE FROM stat_counts WHERE domain_id = $1 AND tag = $2`, r.domain, r.tag); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return 0, notFound(err, "tags")
	}
	if len(gone) > 0 {
		e.db.forgetTagRoom(0)
	}
	return len(gone), nil
}

// compactStats merges the stripes of stat_counts' hours in the two days
// before before into stripe 0 (see CompactCounts). Hours are recorded as
// they happen, so older ones have no stripes left to merge; the window
// keeps each pass to recent rows (the hour index) instead of the table.
func (e Events) compactStats(ctx context.Context, before time.Time) error {
	end := hourOf(ms(before))
	_, err := e.db.w.ExecContext(ctx, `WITH moved AS (
			DELETE FROM stat_counts WHERE hour >= $2 AND hour < $1 AND stripe <> 0 RETURNING domain_id, tag, hour, stat, n)
		INSERT INTO stat_counts (domain_id, tag, hour, stat, stripe, n)
		SELECT domain_id, tag, hour, stat, 0, SUM(n) FROM moved GROUP BY domain_id, tag, hour, stat
		ON CONFLICT (domain_id, tag, hour, stat, stripe) DO UPDATE SET n = stat_counts.n + excluded.n`, end, end-2*dayMS)
	return notFound(err, "stat counts")
}
