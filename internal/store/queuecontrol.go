package store

import (
	"context"
	"database/sql"
	"strconv"
	"strings"
	"time"

	"github.com/postline/postline/internal/apperr"
	"github.com/postline/postline/internal/event"
	"github.com/postline/postline/internal/sending"
	"github.com/postline/postline/internal/suspend"
)

var (
	_ sending.ControlStore = Queue{}
	_ sending.HoldStore    = Queue{}
)

// heldDomains are the ids of the domains whose deliveries the claim
// leaves alone: those named by a domain suspension in force at $3 (not
// ended, its until not passed: ended rows stay for the history), and
// those of an account named by one. Both parts go through indexes
// (domains_name, the accounts' login, domains_account); with no
// suspension they read nothing.
const heldDomains = `SELECT dm.id FROM suspensions x JOIN domains dm ON dm.name = x.value
		WHERE x.kind = 'domain' AND x.ended_at IS NULL AND (x.until IS NULL OR x.until > $3)
	UNION ALL SELECT dm.id FROM suspensions x JOIN accounts a ON a.login = x.value JOIN domains dm ON dm.account_id = a.id
		WHERE x.kind = 'account' AND x.ended_at IS NULL AND (x.until IS NULL OR x.until > $3)`

// heldCount counts the deliveries of a group put back for a site.
const heldCount = `SUM(CASE WHEN d.held_site IS NOT NULL THEN 1 ELSE 0 END)`

// rcptDomain is the recipient's domain (after the last @), lowercase.
func (db *DB) rcptDomain(col string) string {
	if db.Dialect == Postgres {
		return `lower(substring(` + col + ` from '[^@]*$'))`
	}
	// rtrim drops the trailing characters that are not "@": what is left
	// is the local part with its "@", which replace removes.
	return `lower(replace(` + col + `, rtrim(` + col + `, replace(` + col + `, '@', '')), ''))`
}

// QueueGroups implements sending.ControlStore.
func (s Queue) QueueGroups(ctx context.Context, by suspend.Kind) ([]sending.GroupCount, error) {
	var q string
	switch by {
	case suspend.Domain:
		q = `SELECT dm.name, '', '', d.state, COUNT(*), ` + heldCount + ` FROM deliveries d JOIN domains dm ON dm.id = d.domain_id
			WHERE d.state IN ('pending', 'deferred', 'sending') GROUP BY dm.name, d.state ORDER BY 1`
	case suspend.Account:
		q = `SELECT a.login, '', '', d.state, COUNT(*), ` + heldCount + ` FROM deliveries d JOIN domains dm ON dm.id = d.domain_id
			JOIN accounts a ON a.id = dm.account_id
			WHERE d.state IN ('pending', 'deferred', 'sending') GROUP BY a.login, d.state ORDER BY 1`
	case suspend.Site:
		q = `SELECT '', CASE WHEN dm.delivery_mode = 'smtp' THEN lower(dm.smtp_host) ELSE '' END,
			CASE WHEN dm.delivery_mode = 'smtp' THEN '' ELSE ` + s.db.rcptDomain("d.recipient") + ` END, d.state, COUNT(*), ` + heldCount + `
			FROM deliveries d JOIN domains dm ON dm.id = d.domain_id
			WHERE d.state IN ('pending', 'deferred', 'sending') GROUP BY 1, 2, 3, 4 ORDER BY 2, 3`
	default:
		return nil, apperr.Field("by", "want site, domain or account")
	}
	rows, err := s.db.rd.QueryContext(ctx, q)
	if err != nil {
		return nil, notFound(err, "queue")
	}
	defer rows.Close()
	var out []sending.GroupCount
	for rows.Next() {
		var g sending.GroupCount
		if err := rows.Scan(&g.Name, &g.Dest.RelayHost, &g.Dest.Domain, &g.State, &g.N, &g.Held); err != nil {
			return nil, notFound(err, "queue")
		}
		out = append(out, g)
	}
	return out, notFound(rows.Err(), "queue")
}

// selection returns the SQL condition on deliveries (columns prefixed by
// p) that sel stands for, its arguments numbered after args.
func (s Queue) selection(p string, sel sending.Selection, args []any) (string, []any) {
	arg := func(v any) string {
		args = append(args, v)
		return "$" + strconv.Itoa(len(args))
	}
	list := func(vs []string) string {
		marks := make([]string, len(vs))
		for i, v := range vs {
			marks[i] = arg(v)
		}
		return strings.Join(marks, ", ")
	}
	switch {
	case sel.Domain != "":
		return p + `domain_id IN (SELECT id FROM domains WHERE name = ` + arg(sel.Domain) + `)`, args
	case sel.Account != "":
		return p + `domain_id IN (SELECT dm.id FROM domains dm JOIN accounts a ON a.id = dm.account_id WHERE a.login = ` +
			arg(sel.Account) + `)`, args
	case sel.Site != "":
		or := []string{p + `held_site = ` + arg(sel.Site)}
		if len(sel.RelayHosts) > 0 {
			or = append(or, p+`domain_id IN (SELECT id FROM domains WHERE delivery_mode = 'smtp' AND lower(smtp_host) IN (`+
				list(sel.RelayHosts)+`))`)
		}
		if len(sel.RcptDomains) > 0 {
			or = append(or, `(`+p+`domain_id IN (SELECT id FROM domains WHERE delivery_mode <> 'smtp') AND `+
				s.db.rcptDomain(p+"recipient")+` IN (`+list(sel.RcptDomains)+`))`)
		}
		return `(` + strings.Join(or, " OR ") + `)`, args
	}
	return `1 = 1`, args
}

// RetrySelected implements sending.ControlStore.
func (s Queue) RetrySelected(ctx context.Context, sel sending.Selection, now time.Time) (int64, error) {
	cond, args := s.selection("", sel, []any{ms(now)})
	res, err := s.db.w.ExecContext(ctx, `UPDATE deliveries SET next_attempt_at = $1
		WHERE state = 'deferred' AND next_attempt_at > $1 AND `+cond, args...)
	if err != nil {
		return 0, notFound(err, "queue")
	}
	return res.RowsAffected()
}

// FailSelected implements sending.ControlStore. The state is checked
// again on the row being changed, so a delivery a worker claims meanwhile
// is left to the worker.
func (s Queue) FailSelected(ctx context.Context, sel sending.Selection, message string, now time.Time, limit int,
	entries func([]sending.Delivery) []event.Entry) ([]sending.Delivery, error) {
	cond, args := s.selection("d.", sel, []any{message, ms(now), limit})
	out, err := NewSending(s.db).transition(ctx, s.db.InTx, func(q Querier) (*sql.Rows, error) {
		return q.QueryContext(ctx, `UPDATE deliveries SET state = 'failed', last_message = $1, updated_at = $2, held_site = NULL
			WHERE state IN ('pending', 'deferred') AND id IN (SELECT d.id FROM deliveries d
				WHERE d.state IN ('pending', 'deferred') AND `+cond+` ORDER BY d.id LIMIT $3 + 0) RETURNING id`, args...)
	}, entries)
	return out, notFound(err, "queue")
}

// WakeHeldSite implements sending.ControlStore.
func (s Queue) WakeHeldSite(ctx context.Context, site string, now time.Time) (int64, error) {
	res, err := s.db.w.ExecContext(ctx, `UPDATE deliveries SET next_attempt_at = $2, held_site = NULL
		WHERE held_site = $1 AND state IN ('pending', 'deferred')`, site, ms(now))
	if err != nil {
		return 0, notFound(err, "queue")
	}
	return res.RowsAffected()
}

// HoldDelivery implements sending.HoldStore, like Sending.Release (only
// the lease's owner may), marking the site.
func (s Queue) HoldDelivery(ctx context.Context, id int64, owner, site string, next time.Time) error {
	_, err := s.db.w.ExecContext(ctx, `UPDATE deliveries SET state = CASE WHEN attempts <= 1 THEN 'pending' ELSE 'deferred' END,
		attempts = attempts - 1, next_attempt_at = $4, held_site = $3, lease_owner = NULL, lease_until = NULL
		WHERE id = $1 AND lease_owner = $2 AND state = 'sending'`, id, owner, sql.NullString{String: site, Valid: site != ""}, ms(next))
	return notFound(err, "delivery")
}
