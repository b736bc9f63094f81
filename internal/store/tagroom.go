package store

import (
	"context"
	"sync"
	"time"

	"github.com/postline/postline/internal/stats"
)

// tagRoomTTL is how long a domain counted full is trusted to stay full.
// Its new tags are not even tried for that long, so a tag deleted or
// forgotten by another process frees its place here this much later (this
// process's own deletions free it at once: forgetTagRoom).
const tagRoomTTL = 30 * time.Second

// tagRoom remembers the domains that had no room for a new tag when last
// counted. Inserting a new tag counts the domain's tags in SQL (the exact
// bound); at the bound that is every tag of the domain, for every new tag
// of every recorded entry: 10 untracked tags made a delivery's recording
// ten times slower on SQLite's single writer. A full domain's new tags
// are skipped instead; a domain with room gets the exact check.
type tagRoom struct {
	mu   sync.Mutex
	full map[int64]time.Time // domain → when it was counted full
}

// hasTagRoom reports whether the domain may have room for a new tag: false
// when it was counted full within tagRoomTTL, else it counts with q (see
// Events.tagReader).
func (db *DB) hasTagRoom(ctx context.Context, q Querier, domainID int64) (bool, error) {
	now := time.Now()
	db.tagRoom.mu.Lock()
	full, ok := db.tagRoom.full[domainID]
	db.tagRoom.mu.Unlock()
	if ok && now.Sub(full) < tagRoomTTL {
		return false, nil
	}
	var n int
	if err := q.QueryRowContext(ctx, `SELECT count(*) FROM tags WHERE domain_id = $1`, domainID).Scan(&n); err != nil {
		return false, err
	}
	db.tagRoom.mu.Lock()
	defer db.tagRoom.mu.Unlock()
	if n < stats.MaxTagsPerDomain {
		delete(db.tagRoom.full, domainID)
		return true, nil
	}
	if db.tagRoom.full == nil {
		db.tagRoom.full = map[int64]time.Time{}
	}
	db.tagRoom.full[domainID] = now
	return false, nil
}

// forgetTagRoom forgets that the domain (every domain with 0) was full,
// once tags were deleted, so that their places are taken at once.
func (db *DB) forgetTagRoom(domainID int64) {
	db.tagRoom.mu.Lock()
	defer db.tagRoom.mu.Unlock()
	if domainID == 0 {
		clear(db.tagRoom.full)
		return
	}
	delete(db.tagRoom.full, domainID)
}
