package tracking

import (
	"context"
	"strings"
	"sync"
	"time"
)

// hostCache remembers for a short while which host names are tracking
// domains, so the check on every request rarely reaches the database.
type hostCache struct {
	mu sync.Mutex
	m  map[string]hostEntry
}

type hostEntry struct {
	tracking bool
	at       time.Time
}

const hostCacheTTL, hostCacheSize = 30 * time.Second, 4096

// IsTrackingHost reports whether host is some domain's tracking domain.
func (s *Service) IsTrackingHost(ctx context.Context, host string) (bool, error) {
	host = strings.ToLower(strings.TrimSuffix(host, "."))
	now := s.now()
	s.hosts.mu.Lock()
	e, ok := s.hosts.m[host]
	s.hosts.mu.Unlock()
	if ok && now.Sub(e.at) < hostCacheTTL {
		return e.tracking, nil
	}
	yes, err := s.store.IsTrackingHost(ctx, host)
	if err != nil {
		return false, err
	}
	s.hosts.mu.Lock()
	if s.hosts.m == nil || len(s.hosts.m) >= hostCacheSize {
		s.hosts.m = map[string]hostEntry{} // a bound against hosts made up by clients
	}
	s.hosts.m[host] = hostEntry{tracking: yes, at: now}
	s.hosts.mu.Unlock()
	return yes, nil
}
