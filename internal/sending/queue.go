package sending

import (
	"context"
	"time"
)

// QueueCount is the queue of one domain: deliveries waiting for their
// first attempt (queued), waiting after a failed one (deferred), and being
// attempted now (in flight).
type QueueCount struct {
	DomainID int64
	Queued   int
	Deferred int
	InFlight int
	// OldestDeferred is when the longest-deferred delivery was accepted;
	// nil when nothing is deferred.
	OldestDeferred *time.Time
}

// QueueStore reads and nudges the queue (the deliveries table).
type QueueStore interface {
	// QueueCounts counts the waiting deliveries of the given domains (of
	// every domain when domainIDs is empty), one QueueCount per domain
	// that has any.
	QueueCounts(ctx context.Context, domainIDs []int64) ([]QueueCount, error)
	// RetryDeferred makes the deferred deliveries of a domain (every
	// domain when domainID is 0) due at now and returns how many.
	RetryDeferred(ctx context.Context, domainID int64, now time.Time) (int64, error)
}

// Queue is the operator's view of the delivery queue.
type Queue struct {
	store QueueStore
	now   func() time.Time
	ctl   *ControlConfig // nil until WithControl
}

// NewQueue returns the queue view; now may be nil for time.Now.
func NewQueue(st QueueStore, now func() time.Time) *Queue {
	if now == nil {
		now = time.Now
	}
	return &Queue{store: st, now: now}
}

// Counts returns the queue of the given domains (every domain when none).
func (q *Queue) Counts(ctx context.Context, domainIDs ...int64) ([]QueueCount, error) {
	return q.store.QueueCounts(ctx, domainIDs)
}

// RetryNow makes deferred deliveries due at once ("retry now"): of one
// domain, or of every domain when domainID is 0. Their attempt counts and
// the maximum message age are unchanged.
func (q *Queue) RetryNow(ctx context.Context, domainID int64) (int64, error) {
	return q.store.RetryDeferred(ctx, domainID, q.now())
}
