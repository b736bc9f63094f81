package receiving

import (
	"context"
	"time"

	"github.com/postline/postline/internal/apperr"
)

// errNotFound is the answer for a message that is not the domain's,
// gone with retention, or not an id at all: never told apart.
func errNotFound() error { return apperr.Errorf(apperr.NotFound, "message not found") }

// since is the oldest time a stored message may have and still be shown:
// one past the retention is gone even before the pruner deletes it.
func (s *Service) since() time.Time { return s.cfg.Now().Add(-s.cfg.Retention) }

// List returns a page of the domain's stored messages, newest first, and
// how many match f.
func (s *Service) List(ctx context.Context, f Filter) ([]Message, int, error) {
	f.Since = s.since()
	return s.deps.Store.ListMessages(ctx, f)
}

// Get returns one of the domain's stored messages, raw bytes included.
func (s *Service) Get(ctx context.Context, domainID int64, id string) (Message, error) {
	if !ValidID(id) {
		return Message{}, errNotFound()
	}
	m, err := s.deps.Store.Message(ctx, domainID, id)
	if apperr.CodeOf(err) == apperr.NotFound || (err == nil && m.ReceivedAt.Before(s.since())) {
		return Message{}, errNotFound()
	}
	return m, err
}

// Prune deletes the stored messages past the retention and returns how
// many it deleted.
func (s *Service) Prune(ctx context.Context) (int64, error) {
	return s.deps.Store.PruneMessages(ctx, s.since(), 500)
}
