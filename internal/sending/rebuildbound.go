package sending

import (
	"context"
	"fmt"
	"sync"

	"github.com/postline/postline/internal/apperr"
)

// Rebuilder is what builds a message's copy for the console and the API
// (*Worker).
type Rebuilder interface {
	Rebuild(ctx context.Context, domainID int64, messageID, recipient string) (Copy, error)
}

// BoundedRebuilds lets at most PerDomain rebuilds of one domain's copies,
// and Total in all, run at once: each holds the whole message in memory
// (a 25 MiB message two or three times over while it is parsed for a
// page), and every view of a message's page, its frame, its raw copy or
// an attachment rebuilds it. Past either bound the view is a 429 naming
// --message-rebuilds, to be retried in a moment.
type BoundedRebuilds struct {
	Next      Rebuilder
	Total     int
	PerDomain int

	mu      sync.Mutex
	running int
	by      map[int64]int
}

// Rebuild implements Rebuilder.
func (b *BoundedRebuilds) Rebuild(ctx context.Context, domainID int64, messageID, recipient string) (Copy, error) {
	if err := b.take(domainID); err != nil {
		return Copy{}, err
	}
	defer b.give(domainID)
	return b.Next.Rebuild(ctx, domainID, messageID, recipient)
}

func (b *BoundedRebuilds) take(domainID int64) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.by == nil {
		b.by = map[int64]int{}
	}
	if b.running >= b.Total || b.by[domainID] >= b.PerDomain {
		return &apperr.Error{Code: apperr.RateLimited, RetryAfter: 2, Message: fmt.Sprintf(
			"At most %d copies of a domain's messages (and %d in all) are built at once (--message-rebuilds); retry in a moment.",
			b.PerDomain, b.Total)}
	}
	b.running++
	b.by[domainID]++
	return nil
}

func (b *BoundedRebuilds) give(domainID int64) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.running--
	if b.by[domainID]--; b.by[domainID] == 0 {
		delete(b.by, domainID)
	}
}
