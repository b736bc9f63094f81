package delivery

import (
	"context"
	"net/netip"
	"testing"
	"time"

	"github.com/postline/postline/internal/dnsclient"
)

// mxResolver answers every domain with one MX host at 127.0.0.1.
type mxResolver struct{}

func (mxResolver) LookupMX(context.Context, string) ([]dnsclient.MX, error) {
	return []dnsclient.MX{{Host: "mx.example.test", Pref: 10}}, nil
}

func (mxResolver) LookupIP(context.Context, string) ([]netip.Addr, error) {
	return []netip.Addr{netip.MustParseAddr("127.0.0.1")}, nil
}

// Paths without connections are forgotten after pathIdleLife, not before,
// and never while a delivery holds a connection.
func TestPrunePaths(t *testing.T) {
	t.Parallel()
	tr, err := New(Config{Resolver: mxResolver{}})
	if err != nil {
		t.Fatal(err)
	}
	defer tr.Close()
	ctx := context.Background()
	idle, _, err := tr.Admit(ctx, Route{Mode: ModeDirect}, "a@idle.test")
	if err != nil {
		t.Fatal(err)
	}
	idle.Release()
	busy, _, err := tr.Admit(ctx, Route{Mode: ModeDirect, Source: "other"}, "a@busy.test")
	if err != nil {
		t.Fatal(err)
	}
	defer busy.Release()
	paths := func(at time.Time) int {
		tr.mu.Lock()
		defer tr.mu.Unlock()
		tr.pruned = time.Time{}
		tr.pruneLocked(at)
		return len(tr.paths)
	}
	if n := paths(time.Now().Add(pathIdleLife / 2)); n != 2 {
		t.Fatalf("%d paths after half their idle life, want 2", n)
	}
	if n := paths(time.Now().Add(2 * pathIdleLife)); n != 1 {
		t.Fatalf("%d paths after their idle life, want 1 (the one holding a connection)", n)
	}
}
