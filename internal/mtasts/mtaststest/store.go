package mtaststest

import (
	"context"
	"sync"

	"github.com/postline/postline/internal/mtasts"
)

// MemStore is an mtasts.Store in memory, for tests that need no database.
type MemStore struct {
	mu sync.Mutex
	m  map[string]mtasts.Cached
}

var _ mtasts.Store = (*MemStore)(nil)

// LoadPolicy implements mtasts.Store.
func (s *MemStore) LoadPolicy(_ context.Context, domain string) (mtasts.Cached, bool, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	c, ok := s.m[domain]
	return c, ok, nil
}

// SavePolicy implements mtasts.Store.
func (s *MemStore) SavePolicy(_ context.Context, c mtasts.Cached) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.m == nil {
		s.m = make(map[string]mtasts.Cached)
	}
	s.m[c.Domain] = c
	return nil
}
