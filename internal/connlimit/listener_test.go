package connlimit_test

import (
	"bufio"
	"errors"
	"net"
	"net/netip"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/postline/postline/internal/connlimit"
)

// serve accepts on a bounded loopback listener and greets each admitted
// client with "220 hello" and then echoes lines; it returns the address and
// the listener.
func serve(t *testing.T, cfg connlimit.Config) (string, *connlimit.Listener) {
	t.Helper()
	inner, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ln := connlimit.New(inner, cfg)
	t.Cleanup(func() { ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				c.SetReadDeadline(time.Now().Add(time.Hour)) // ignored when governed
				c.Write([]byte("220 hello\r\n"))
				r := bufio.NewReader(c)
				for {
					line, err := r.ReadString('\n')
					if err != nil {
						return
					}
					if strings.TrimSpace(line) == "PROMOTE" {
						connlimit.Of(c).Promote()
					}
					c.Write([]byte("250 " + line))
				}
			}()
		}
	}()
	return inner.Addr().String(), ln
}

func greeting(t *testing.T, addr string) (net.Conn, string) {
	t.Helper()
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	c.SetReadDeadline(time.Now().Add(5 * time.Second))
	line, _ := bufio.NewReader(c).ReadString('\n')
	return c, strings.TrimSpace(line)
}

func TestBounds(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name       string
		cfg        connlimit.Config
		admitted   int
		wantRefuse string
	}{
		{"total", connlimit.Config{Max: 3, PerIP: 10}, 3, "421 4.3.2 Too many connections to this server (at most 3 at once); try again later"},
		{"per address", connlimit.Config{Max: 10, PerIP: 2}, 2,
			"421 4.7.0 Too many connections from your address (at most 2 at once); close one and try again later"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			tc.cfg.Refuse = connlimit.SMTPRefusal(nil)
			addr, ln := serve(t, tc.cfg)
			var held []net.Conn
			for i := 0; i < tc.admitted; i++ {
				c, got := greeting(t, addr)
				if got != "220 hello" {
					t.Fatalf("connection %d: %q, want 220 hello", i+1, got)
				}
				held = append(held, c)
			}
			for i := 0; i < 3; i++ {
				if _, got := greeting(t, addr); got != tc.wantRefuse {
					t.Fatalf("connection past the bound: %q, want %q", got, tc.wantRefuse)
				}
			}
			if n := ln.Open(); n != tc.admitted {
				t.Fatalf("open = %d, want %d", n, tc.admitted)
			}
			held[0].Close() // its place comes back
			deadline := time.Now().Add(5 * time.Second)
			for ln.Open() != tc.admitted-1 {
				if time.Now().After(deadline) {
					t.Fatalf("open = %d after a close, want %d", ln.Open(), tc.admitted-1)
				}
				time.Sleep(5 * time.Millisecond)
			}
			if _, got := greeting(t, addr); got != "220 hello" {
				t.Fatalf("after a close: %q, want 220 hello", got)
			}
		})
	}
}

// A client silent in the first phase is cut at its end, whatever deadline
// the server sets; after Promote it may pause longer than that.
func TestTimeouts(t *testing.T) {
	t.Parallel()
	addr, _ := serve(t, connlimit.Config{Timeouts: &connlimit.Timeouts{First: 300 * time.Millisecond, Idle: 2 * time.Second}})

	silent, _ := greeting(t, addr)
	start := time.Now()
	silent.SetReadDeadline(time.Now().Add(5 * time.Second))
	if _, err := silent.Read(make([]byte, 1)); err == nil || errors.Is(err, os.ErrDeadlineExceeded) {
		t.Fatalf("silent client: read %v, want the server to close", err)
	}
	if took := time.Since(start); took > 2*time.Second {
		t.Fatalf("silent client closed after %s, want about 300ms", took)
	}

	busy, _ := greeting(t, addr)
	r := bufio.NewReader(busy)
	busy.Write([]byte("PROMOTE\r\n"))
	if line, _ := r.ReadString('\n'); !strings.HasPrefix(line, "250 PROMOTE") {
		t.Fatalf("PROMOTE answered %q", line)
	}
	time.Sleep(600 * time.Millisecond) // past the first phase
	busy.Write([]byte("NOOP\r\n"))
	if line, err := r.ReadString('\n'); !strings.HasPrefix(line, "250 NOOP") {
		t.Fatalf("after a pause within Idle: %q %v, want 250 NOOP", line, err)
	}
}

// TestClientKey: an IPv6 client is counted by its /64, so that one host
// given a /64 cannot open PerIP connections from each of its addresses;
// IPv4 (and IPv4 seen through IPv6) is counted by the address.
func TestClientKey(t *testing.T) {
	t.Parallel()
	key := func(s string) netip.Addr { return connlimit.ClientKey(netip.MustParseAddr(s).Unmap()) }
	same := [][2]string{
		{"2001:db8:1:2::1", "2001:db8:1:2:ffff:ffff:ffff:fffe"},
		{"::1", "::2"},
		{"::ffff:192.0.2.7", "192.0.2.7"},
	}
	for _, p := range same {
		if key(p[0]) != key(p[1]) {
			t.Errorf("%s and %s are counted apart (%s, %s); want one client", p[0], p[1], key(p[0]), key(p[1]))
		}
	}
	apart := [][2]string{
		{"2001:db8:1:2::1", "2001:db8:1:3::1"},
		{"192.0.2.7", "192.0.2.8"},
	}
	for _, p := range apart {
		if key(p[0]) == key(p[1]) {
			t.Errorf("%s and %s are counted as one client (%s)", p[0], p[1], key(p[0]))
		}
	}
}

// TestEvictUntilPromote: at the total bound a newcomer takes the place of
// the conn that has gone longest without Promote; promoted conns keep
// theirs, and with only those left the newcomer is refused.
func TestEvictUntilPromote(t *testing.T) {
	t.Parallel()
	cfg := connlimit.Config{Max: 2, PerIP: 10, Evict: true, EvictUntilPromote: true, Refuse: connlimit.SMTPRefusal(nil)}
	addr, ln := serve(t, cfg)
	first, _ := greeting(t, addr)
	second, _ := greeting(t, addr)
	if _, got := greeting(t, addr); got != "220 hello" {
		t.Fatalf("a newcomer at the bound with unpromoted conns: %q, want 220 hello", got)
	}
	first.SetReadDeadline(time.Now().Add(2 * time.Second))
	if _, err := first.Read(make([]byte, 64)); err == nil || isTimeout(err) {
		t.Fatalf("the oldest unpromoted conn: %v, want closed", err)
	}
	second.Write([]byte("PROMOTE\r\n"))
	r := bufio.NewReader(second)
	if line, _ := r.ReadString('\n'); !strings.HasPrefix(line, "250 ") {
		t.Fatalf("promote: %q", line)
	}
	third, _ := greeting(t, addr) // evicts the third one's predecessor, the only unpromoted
	third.Write([]byte("PROMOTE\r\n"))
	bufio.NewReader(third).ReadString('\n')
	if _, got := greeting(t, addr); !strings.HasPrefix(got, "421 4.3.2") {
		t.Fatalf("a newcomer with every place promoted: %q, want 421 4.3.2", got)
	}
	if n := ln.Open(); n != 2 {
		t.Fatalf("open = %d, want 2", n)
	}
}

func isTimeout(err error) bool {
	ne, ok := err.(net.Error)
	return ok && ne.Timeout()
}

// TestEvictionSparesTheLoneClient: the victim is the oldest evictable
// conn of the address holding the most, so a flood from a few addresses
// closes its own connections and not a lone client's, however old.
func TestEvictionSparesTheLoneClient(t *testing.T) {
	t.Parallel()
	cfg := connlimit.Config{Max: 4, PerIP: 10, Evict: true, EvictAlways: true, Refuse: connlimit.SMTPRefusal(nil)}
	addr, _ := serve(t, cfg)
	dial := func(src string) (net.Conn, string) {
		t.Helper()
		d := net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(src)}}
		c, err := d.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Close() })
		c.SetReadDeadline(time.Now().Add(5 * time.Second))
		line, _ := bufio.NewReader(c).ReadString('\n')
		return c, strings.TrimSpace(line)
	}
	lone, _ := dial("127.0.0.2") // the oldest of all
	var flood []net.Conn
	for range 3 {
		c, _ := dial("127.0.0.3")
		flood = append(flood, c)
	}
	for i := range 6 { // each newcomer closes one of the flood's, oldest first
		if _, got := dial("127.0.0.4"); got != "220 hello" {
			t.Fatalf("newcomer %d: %q, want 220 hello", i+1, got)
		}
	}
	lone.SetReadDeadline(time.Now().Add(200 * time.Millisecond))
	if _, err := lone.Read(make([]byte, 1)); !isTimeout(err) {
		t.Fatalf("the lone client's connection: %v, want still open", err)
	}
	flood[0].SetReadDeadline(time.Now().Add(2 * time.Second))
	if _, err := flood[0].Read(make([]byte, 1)); err == nil || isTimeout(err) {
		t.Fatalf("the flood's oldest connection: %v, want closed", err)
	}
}
