package main

import (
	"net"
	"testing"

	"github.com/postline/postline/internal/config"
)

// The console's address in serve's start-up lines: the public URL when
// set, else the listener's, https under --api-tls, loopback for a
// wildcard listener.
func TestConsoleURL(t *testing.T) {
	t.Parallel()
	at := func(s string) net.Addr { a, _ := net.ResolveTCPAddr("tcp", s); return a }
	for _, c := range []struct {
		cfg  config.Config
		addr net.Addr
		want string
	}{
		{config.Config{}, at("127.0.0.1:8025"), "http://127.0.0.1:8025/"},
		{config.Config{APITLS: true}, at("[::1]:8443"), "https://[::1]:8443/"},
		{config.Config{}, at("0.0.0.0:8025"), "http://127.0.0.1:8025/"},
		{config.Config{PublicURL: "https://mail.example.com/"}, at("0.0.0.0:8025"), "https://mail.example.com/"},
		{config.Config{PublicURL: "https://example.com/postline"}, at("127.0.0.1:1"), "https://example.com/postline/"},
	} {
		if got := consoleURL(c.cfg, c.addr); got != c.want {
			t.Errorf("consoleURL(%+v, %s) = %s, want %s", c.cfg.PublicURL, c.addr, got, c.want)
		}
	}
}
