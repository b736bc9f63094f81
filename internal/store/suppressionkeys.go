package store

import (
	"context"
	"slices"
	"sync/atomic"

	"github.com/postline/postline/internal/suppression"
)

// suppressionWrites counts this process's writes to the suppression lists:
// advanced when one starts and again when it has committed (or failed), so
// that a reader of the count can tell whether a write may have happened
// since it last looked (suppression.KeyIndex). noted, when set, hears of
// each written key before the write is counted as ended: ids may commit
// out of order on PostgreSQL, so following the lists by id alone could
// miss this process's own write.
type suppressionWrites struct {
	n     atomic.Uint64
	noted atomic.Pointer[func(domainID int64, recipient string)]
}

// suppressionWrite marks a write of entries (nil ones skipped) starting;
// the returned func marks it done: call it after the commit, or the
// failure. With no entries it does nothing.
func (db *DB) suppressionWrite(entries ...*suppression.Entry) func() {
	entries = slices.DeleteFunc(entries, func(e *suppression.Entry) bool { return e == nil })
	if len(entries) == 0 {
		return func() {}
	}
	db.supWrites.n.Add(1)
	return func() {
		if f := db.supWrites.noted.Load(); f != nil {
			for _, e := range entries {
				(*f)(e.DomainID, e.Recipient)
			}
		}
		db.supWrites.n.Add(1)
	}
}

// SuppressionWrites is the count of this process's suppression writes
// begun and ended: unchanged means none happened in between.
func (db *DB) SuppressionWrites() uint64 { return db.supWrites.n.Load() }

// OnSuppressionWrite makes every key this process writes to the lists
// reach f as its write ends.
func (db *DB) OnSuppressionWrite(f func(domainID int64, recipient string)) {
	db.supWrites.noted.Store(&f)
}

// SuppressionKey is one entry's list key: what a check looks up.
type SuppressionKey struct {
	ID        int64
	DomainID  int64
	Recipient string
}

// SuppressionKeys returns up to limit entries' keys (every type, whitelist
// included) with id > afterID, in id order: what the intake's in-memory
// key index is built and followed from.
func (s Suppressions) SuppressionKeys(ctx context.Context, afterID int64, limit int) ([]SuppressionKey, error) {
	rows, err := s.db.rd.QueryContext(ctx, `SELECT id, domain_id, recipient FROM suppressions
		WHERE id > $1 ORDER BY id LIMIT $2 + 0`, afterID, limit)
	if err != nil {
		return nil, notFound(err, "suppressions")
	}
	defer rows.Close()
	var out []SuppressionKey
	for rows.Next() {
		var k SuppressionKey
		if err := rows.Scan(&k.ID, &k.DomainID, &k.Recipient); err != nil {
			return nil, notFound(err, "suppressions")
		}
		out = append(out, k)
	}
	return out, notFound(rows.Err(), "suppressions")
}
