package sending

import (
	"context"
	"testing"

	"github.com/postline/postline/internal/apperr"
)

type blockingRebuilder struct{ release chan struct{} }

func (b blockingRebuilder) Rebuild(context.Context, int64, string, string) (Copy, error) {
	<-b.release
	return Copy{}, nil
}

// Views of message copies in flight are bounded per domain and in all:
// the one past a bound is a 429 naming the flag, and a finished one frees
// its place.
func TestBoundedRebuilds(t *testing.T) {
	t.Parallel()
	next := blockingRebuilder{release: make(chan struct{})}
	b := &BoundedRebuilds{Next: next, Total: 3, PerDomain: 2}
	done := make(chan error, 3)
	for _, dom := range []int64{1, 1, 2} {
		go func() { _, err := b.Rebuild(context.Background(), dom, "m", ""); done <- err }()
	}
	waitRunning := func(n int) {
		for {
			b.mu.Lock()
			r := b.running
			b.mu.Unlock()
			if r == n {
				return
			}
		}
	}
	waitRunning(3)
	for _, dom := range []int64{1, 3} {
		_, err := b.Rebuild(context.Background(), dom, "m", "")
		if e, ok := apperr.As(err); !ok || e.Code != apperr.RateLimited || e.RetryAfter == 0 {
			t.Errorf("domain %d past the bound: %v, want a rate-limited error", dom, err)
		}
	}
	next.release <- struct{}{}
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	waitRunning(2)
	go func() { _, err := b.Rebuild(context.Background(), 3, "m", ""); done <- err }()
	waitRunning(3)
	close(next.release)
	for range 3 {
		if err := <-done; err != nil {
			t.Error(err)
		}
	}
}
