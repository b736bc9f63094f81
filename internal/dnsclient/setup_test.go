package dnsclient_test

import (
	"github.com/postline/postline/internal/testutil/clock"
	"testing"
	"time"

	"github.com/postline/postline/internal/dnsclient"
	"github.com/postline/postline/internal/dnstest"
)

// fixture is what every test gets: a fresh authoritative server, a fake
// clock and a resolver aimed at the server.
type fixture struct {
	srv   *dnstest.Server
	clock *clock.Fake
	r     *dnsclient.Resolver
}

// setup starts a dnstest server and a resolver with short timeouts. mod, if
// given, adjusts the config before New.
func setup(t *testing.T, mod ...func(*dnsclient.Config)) *fixture {
	t.Helper()
	srv := dnstest.New(t)
	clock := clock.New(time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC))
	cfg := dnsclient.Config{
		Server:   srv.Addr(),
		Timeout:  150 * time.Millisecond,
		Attempts: 2,
		NowFunc:  clock.Now,
	}
	for _, m := range mod {
		m(&cfg)
	}
	r, err := dnsclient.New(cfg)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	return &fixture{srv: srv, clock: clock, r: r}
}
