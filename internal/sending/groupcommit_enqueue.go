package sending

import (
	"context"
	"errors"
)

// enqueueGroupMax is the most requests one intake transaction commits. The
// group grows only while a commit is in progress, so under light load
// every request still commits alone and at once.
const enqueueGroupMax = 64

// enqueue stores one accepted request, committed with whatever other
// requests are waiting for the database at the same time: one commit
// (and, on PostgreSQL, one WAL flush and one NOTIFY) for the group
// instead of one per request. It returns only after the request's own
// rows committed, so the 202 still means "stored".
func (s *Service) enqueue(ctx context.Context, job EnqueueJob) error {
	err := s.enqueues.do(ctx, job)
	if errors.Is(err, errRetryAlone) {
		return s.store.Enqueue(ctx, job.Send, job.Attachments, job.Deliveries, job.Entries)
	}
	return err
}
