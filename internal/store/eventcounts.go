package store

import (
	"context"
	"database/sql"
	"strconv"
	"strings"
	"time"

	"github.com/postline/postline/internal/event"
)

// Count implements event.Store.
//
// Totals of filters on time and type alone are exact and cost the same at
// any table size: without a time range they add up event_totals' rows;
// with one they add up event_counts' hourly rows inside the range
// and count the rows of the two partial hours at its ends through
// events_time / events_type (at most an hour each). Other filters are
// counted through their index up to max rows, so one request reads a
// bounded number of rows however many match.
func (e Events) Count(ctx context.Context, f event.Filter, max int) (int, bool, error) {
	if f.OnlyTimeAndType() {
		n, err := e.countByHours(ctx, f)
		return n, true, err
	}
	where, args := e.where(f)
	args = append(args, max+1)
	var n int
	err := e.reader().QueryRowContext(ctx, `SELECT count(*) FROM (SELECT 1 FROM events WHERE `+where+
		` LIMIT $`+strconv.Itoa(len(args))+` + 0) capped`, args...).Scan(&n)
	if err != nil {
		return 0, false, notFound(err, "events")
	}
	if n > max {
		return max, false, nil
	}
	return n, true, nil
}

func (e Events) countByHours(ctx context.Context, f event.Filter) (int, error) {
	args := []any{f.DomainID}
	arg := func(v any) string { args = append(args, v); return "$" + strconv.Itoa(len(args)) }
	typ := ""
	if f.Type != "" {
		typ = " AND event_type = " + arg(string(f.Type))
	}
	count := func(cond string) string {
		return "(SELECT count(*) FROM events WHERE domain_id = $1" + typ + " AND " + cond + ")"
	}
	hasS, hasE := !f.Start.IsZero(), !f.End.IsZero()
	if !hasS && !hasE {
		var n int64
		err := e.reader().QueryRowContext(ctx, "SELECT CAST(COALESCE(SUM(n), 0) AS BIGINT) FROM event_totals WHERE domain_id = $1"+typ,
			args...).Scan(&n)
		return int(n), notFound(err, "event totals")
	}
	s, end := ms(f.Start), ms(f.End)
	if hasS && hasE && s > end {
		return 0, nil
	}
	// Whole hours inside [s, end] are [hs, he).
	hs := hourOf(s)
	if hs < s {
		hs += hourMS
	}
	he := hourOf(end + 1)
	var parts []string
	if hasS && hasE && hs >= he {
		parts = append(parts, count("created_at >= "+arg(s)+" AND created_at <= "+arg(end)))
	} else {
		sum := "(SELECT COALESCE(SUM(n), 0) FROM event_counts WHERE domain_id = $1" + typ
		if hasS {
			sum += " AND hour >= " + arg(hs)
		}
		if hasE {
			sum += " AND hour < " + arg(he)
		}
		parts = append(parts, sum+")")
		if hasS && hs > s {
			parts = append(parts, count("created_at >= "+arg(s)+" AND created_at < "+arg(hs)))
		}
		if hasE && he <= end {
			parts = append(parts, count("created_at >= "+arg(he)+" AND created_at <= "+arg(end)))
		}
	}
	// One statement: one snapshot for the sum and the edge counts.
	var n int64
	err := e.reader().QueryRowContext(ctx, "SELECT CAST("+strings.Join(parts, " + ")+" AS BIGINT)", args...).Scan(&n)
	return int(n), notFound(err, "event counts")
}

// Bounds implements event.Store. hi is also the horizon of followers: no
// id at or below it can still appear (see Insert).
func (e Events) Bounds(ctx context.Context, f event.Filter) (lo, hi int64, err error) {
	var q string
	var args []any
	if f.Start.IsZero() && f.End.IsZero() {
		q, args = `SELECT COALESCE((SELECT id FROM events WHERE domain_id = $1 ORDER BY id LIMIT 1), 0),
			COALESCE((SELECT id FROM events WHERE domain_id = $1 ORDER BY id DESC LIMIT 1), 0)`, []any{f.DomainID}
	} else {
		// MIN(id + 0), not MIN(id): both planners would turn MIN(id) into a
		// walk of the id index filtering created_at, which reads every row
		// before the range when the range is recent. This aggregates the
		// time index's range instead: one pass over the matching entries.
		var where string
		where, args = e.where(event.Filter{DomainID: f.DomainID, Start: f.Start, End: f.End})
		q = `SELECT COALESCE(MIN(id + 0), 0), COALESCE(MAX(id + 0), 0) FROM events WHERE ` + where
	}
	if err = e.reader().QueryRowContext(ctx, q, args...).Scan(&lo, &hi); err != nil {
		return 0, 0, notFound(err, "events")
	}
	if e.db.Dialect == Postgres && hi > 0 {
		// Stop below every id a running transaction may still commit (see
		// Insert). pg_locks is read after the statement above: an insert
		// that committed in between is visible to the caller's next read,
		// and one still running is in pg_locks. Unrelated advisory locks
		// of the bigint form may only hold followers back while held.
		var bound sql.NullInt64
		key := `((l.classid::bigint << 32) | l.objid::bigint)`
		err = e.reader().QueryRowContext(ctx, `SELECT min(`+key+` & ((1::bigint << `+strconv.Itoa(lockIDBits)+`) - 1)) FROM pg_locks l
			WHERE l.locktype = 'advisory' AND l.objsubid = 1
			AND l.database = (SELECT oid FROM pg_database WHERE datname = current_database())
			AND `+key+` >> `+strconv.Itoa(lockIDBits)+` = $1`, e.db.ns).Scan(&bound)
		if err != nil {
			return 0, 0, notFound(err, "event id bound")
		}
		if bound.Valid && bound.Int64 < hi {
			hi = bound.Int64
		}
	}
	return lo, hi, nil
}

// Prune implements event.Store. It visits only the domains that have an
// hour older than the cutoff (from event_counts), deletes their old rows
// oldest first in short transactions, and takes the deleted rows off the
// hourly counts in the same transaction, so totals stay exact throughout.
// Then the stat counts of hours before the cutoff's go, and the tags not
// used since it (pruneStats).
func (e Events) Prune(ctx context.Context, before time.Time, batch int) (int64, error) {
	cut := ms(before)
	rows, err := e.db.rd.QueryContext(ctx, `SELECT DISTINCT domain_id FROM event_counts WHERE hour < $1`, cut)
	if err != nil {
		return 0, notFound(err, "event counts")
	}
	var domains []int64
	for rows.Next() {
		var d int64
		if err := rows.Scan(&d); err != nil {
			rows.Close()
			return 0, notFound(err, "event counts")
		}
		domains = append(domains, d)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return 0, notFound(err, "event counts")
	}
	var total int64
	for _, d := range domains {
		for {
			if err := ctx.Err(); err != nil {
				return total, err
			}
			var n int
			err := e.db.InTx(ctx, func(q Querier) (err error) {
				n, err = e.In(q).pruneBatch(ctx, d, cut, batch)
				return err
			})
			total += int64(n)
			if err != nil {
				return total, err
			}
			if n < batch {
				break
			}
		}
	}
	return total, e.pruneStats(ctx, cut, batch)
}

func (e Events) pruneBatch(ctx context.Context, domainID, cut int64, batch int) (int, error) {
	rows, err := e.q.QueryContext(ctx, `DELETE FROM events WHERE domain_id = $1 AND id IN
		(SELECT id FROM events WHERE domain_id = $1 AND created_at < $2 ORDER BY created_at LIMIT $3 + 0)
		RETURNING created_at, event_type`, domainID, cut, batch)
	if err != nil {
		return 0, notFound(err, "events")
	}
	gone := map[countKey]int64{}
	n := 0
	for rows.Next() {
		var created int64
		var typ event.Type
		if err := rows.Scan(&created, &typ); err != nil {
			rows.Close()
			return 0, notFound(err, "events")
		}
		gone[countKey{domainID, hourOf(created), typ}]++
		n++
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return 0, notFound(err, "events")
	}
	totals := map[countKey]int64{}
	for k, c := range gone {
		totals[countKey{domain: k.domain, typ: k.typ}] -= c
	}
	if err := e.upsertTotals(ctx, totals); err != nil {
		return 0, err
	}
	for k, c := range gone {
		// Subtract in stripe 0 (it may go negative while other stripes
		// of the hour are positive: only the sum means anything).
		if _, err := e.q.ExecContext(ctx, `INSERT INTO event_counts (domain_id, hour, event_type, stripe, n)
			VALUES ($1, $2, $3, 0, $4) ON CONFLICT (domain_id, hour, event_type, stripe) DO UPDATE SET n = event_counts.n + excluded.n`,
			k.domain, k.hour, string(k.typ), -c); err != nil {
			return 0, notFound(err, "event counts")
		}
	}
	if len(gone) > 0 {
		// Hours whose entries are all gone leave no rows behind.
		if _, err := e.q.ExecContext(ctx, `DELETE FROM event_counts WHERE domain_id = $1 AND hour < $2 AND
			(SELECT SUM(x.n) FROM event_counts x WHERE x.domain_id = event_counts.domain_id AND x.hour = event_counts.hour
				AND x.event_type = event_counts.event_type) <= 0`, domainID, cut); err != nil {
			return 0, notFound(err, "event counts")
		}
	}
	return n, nil
}

// CompactCounts implements event.Store: on PostgreSQL it merges the
// stripes of hours before t into stripe 0, in one statement per table (so
// a reader sees the rows before or after, with the same sum), event_counts
// and stat_counts. SQLite has nothing to merge.
func (e Events) CompactCounts(ctx context.Context, before time.Time) error {
	if e.db.Dialect != Postgres {
		return nil
	}
	if err := e.compactStats(ctx, before); err != nil {
		return err
	}
	_, err := e.db.w.ExecContext(ctx, `WITH moved AS (
			DELETE FROM event_counts WHERE stripe <> 0 AND hour < $1 RETURNING domain_id, hour, event_type, n)
		INSERT INTO event_counts (domain_id, hour, event_type, stripe, n)
		SELECT domain_id, hour, event_type, 0, SUM(n) FROM moved GROUP BY domain_id, hour, event_type
		ON CONFLICT (domain_id, hour, event_type, stripe) DO UPDATE SET n = event_counts.n + excluded.n`, hourOf(ms(before)))
	return notFound(err, "event counts")
}
