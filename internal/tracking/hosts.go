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

// ServeOn names the hosts the service itself answers on: they are never
// treated as tracking domains, whatever a domain's stored settings say.
func (s *Service) ServeOn(hosts ...string) {
	s.own = map[string]bool{}
	for _, h := range hosts {
		if h = strings.ToLower(strings.TrimSuffix(h, ".")); h != "" {
			s.own[h] = true
		}
	}
}

// IsTrackingHost reports whether host is some domain's tracking domain.
func (s *Service) IsTrackingHost(ctx context.Context, host string) (bool, error) {
	host = strings.ToLower(strings.TrimSuffix(host, "."))
	if host == "" || s.own[host] { // no Host (HTTP/1.0 probes), or the service's own name
		return false, nil
	}
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

// repeatCache remembers recently recorded hits so that the same client
// (address and User-Agent) hitting the same URL again within repeatWindow
// is answered but not recorded again: a double click, a client fetching an
// image twice, or a script hammering its own pixel costs no write. Opens
// and clicks further apart are all recorded. Per process, bounded.
type repeatCache struct {
	mu sync.Mutex
	m  map[string]time.Time
}

const repeatWindow, repeatCacheSize = 2 * time.Second, 50000

// recent reports whether key was recorded within the window.
func (c *repeatCache) recent(key string, now time.Time) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	at, ok := c.m[key]
	return ok && now.Sub(at) < repeatWindow
}

// note remembers that key was recorded at now.
func (c *repeatCache) note(key string, now time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.m == nil || len(c.m) >= repeatCacheSize {
		c.m = map[string]time.Time{}
	}
	c.m[key] = now
}
