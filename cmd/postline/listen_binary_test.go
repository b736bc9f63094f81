package main

import (
	"bufio"
	"crypto/tls"
	"flag"
	"fmt"
	"net"
	"net/http"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/postline/postline/internal/dnstest"
	"github.com/postline/postline/internal/testutil"
)

var idleConns = flag.Int("listen.conns", 300,
	"idle connections TestIdleConnectionsLeaveTheAPIUp opens to each SMTP port (the attack in issue 28: 20000)")

// smtpGreeting dials addr (over TLS from the first byte when implicit) and
// reads the first line; "" when none came within 2 s.
func smtpGreeting(addr string, implicit bool) (net.Conn, string) {
	c, err := net.DialTimeout("tcp", addr, 2*time.Second)
	if err != nil {
		return nil, ""
	}
	if implicit {
		c = tls.Client(c, &tls.Config{InsecureSkipVerify: true}) //nolint:gosec // the server's self-signed loopback certificate
	}
	c.SetReadDeadline(time.Now().Add(2 * time.Second))
	line, _ := bufio.NewReader(c).ReadString('\n')
	c.SetReadDeadline(time.Time{})
	return c, strings.TrimSpace(line)
}

// Idle connections to every SMTP port, more than the process has file
// handles for, leave the API up: each listener holds at most
// --smtp-max-connections (past it the one waiting longest without
// authenticating is closed for the newcomer, or, with none, the newcomer
// reads 421 4.3.2), /readyz answers within 1 s throughout, and the idle
// clients are cut at --smtp-pre-auth-timeout. The process runs with a soft
// open-file limit below its hard one, and raises it.
func TestIdleConnectionsLeaveTheAPIUp(t *testing.T) {
	t.Parallel()
	if runtime.GOOS == "windows" {
		t.Skip("needs sh and ulimit")
	}
	conns := *idleConns
	maxConns, httpMax := conns/3, 64
	// Enough for the bounds and the rest, far below what the attack
	// would take without them (3 × conns).
	limit := 3*maxConns + httpMax + 256
	preAuth := max(4*time.Second, time.Duration(conns)*10*time.Millisecond)
	dns := dnstest.New(t)
	ports := []struct {
		name, addr string
		implicit   bool
	}{{"smtp", testutil.FreeAddr(t), false}, {"submission", testutil.FreeAddr(t), false}, {"submissions", testutil.FreeAddr(t), true}}
	env := []string{"POSTLINE_DATA_DIR=" + t.TempDir(), "POSTLINE_DNS_SERVER=" + dns.Addr(),
		"POSTLINE_SMTP_LISTEN=" + ports[0].addr, "POSTLINE_SUBMISSION_LISTEN=" + ports[1].addr, "POSTLINE_SUBMISSIONS_LISTEN=" + ports[2].addr,
		fmt.Sprint("POSTLINE_SMTP_MAX_CONNECTIONS=", maxConns), fmt.Sprint("POSTLINE_SMTP_MAX_CONNECTIONS_PER_IP=", conns),
		fmt.Sprint("POSTLINE_HTTP_MAX_CONNECTIONS=", httpMax), "POSTLINE_SMTP_PRE_AUTH_TIMEOUT=" + preAuth.String()}
	wrapper := []string{"sh", "-c", fmt.Sprintf(`ulimit -Sn 128 && ulimit -Hn %d && exec "$0" "$@"`, limit)}
	srv := startServeUnder(t, wrapper, env)
	defer srv.stop(t)
	if want := fmt.Sprintf(`msg="open-file limit" soft=%d hard=%d`, limit, limit); !strings.Contains(srv.errs.String(), want) {
		t.Errorf("the log does not say %s:\n%s", want, srv.errs.String())
	}

	stop := make(chan struct{})
	slow := make(chan string, 1)
	go func() { // /readyz, all along
		client := &http.Client{Timeout: time.Second, Transport: &http.Transport{DisableKeepAlives: true}}
		for {
			select {
			case <-stop:
				close(slow)
				return
			case <-time.After(100 * time.Millisecond):
			}
			start := time.Now()
			resp, err := client.Get("http://" + srv.addr + "/readyz")
			if err == nil {
				resp.Body.Close()
			}
			if err != nil || resp.StatusCode != 200 {
				slow <- fmt.Sprintf("/readyz after %s: %v", time.Since(start).Round(time.Millisecond), err)
				<-stop
				close(slow)
				return
			}
		}
	}()

	var mu sync.Mutex
	var held []net.Conn
	defer func() {
		for _, c := range held {
			c.Close()
		}
	}()
	var wg sync.WaitGroup
	attack := time.Now()
	for _, p := range ports {
		wg.Add(1)
		go func() {
			defer wg.Done()
			admitted, refused, silent := 0, 0, 0
			want421 := fmt.Sprintf("421 4.3.2 Too many connections to this server (at most %d at once); try again later", maxConns)
			for i := 0; i < conns && silent < 3; i++ {
				c, greeting := smtpGreeting(p.addr, p.implicit)
				switch {
				case strings.HasPrefix(greeting, "220 "):
					admitted++
					mu.Lock()
					held = append(held, c)
					mu.Unlock()
					continue
				case greeting == want421:
					refused++
				default:
					silent++
					t.Errorf("%s connection %d: %q, want 220 or %q", p.name, i+1, greeting, want421)
				}
				if c != nil {
					c.Close()
				}
			}
			if admitted+refused != conns {
				t.Errorf("%s: %d admitted and %d refused of %d", p.name, admitted, refused, conns)
			}
		}()
	}
	wg.Wait()
	t.Logf("%d connections opened in %s", 3*conns, time.Since(attack).Round(time.Millisecond))
	time.Sleep(300 * time.Millisecond) // /readyz once more with every connection open
	close(stop)
	if msg, ok := <-slow; ok {
		t.Fatalf("the API did not answer while SMTP clients held %d connections: %s", len(held), msg)
	}
	if n := stillOpen(held, 20*time.Millisecond); n > 3*maxConns {
		t.Fatalf("%d connections open over three listeners, want at most 3 x --smtp-max-connections = %d", n, 3*maxConns)
	}

	// The idle clients are cut at the pre-auth timeout, and new ones are
	// admitted again.
	var cut sync.WaitGroup
	var open int
	for _, c := range held {
		cut.Add(1)
		go func() {
			defer cut.Done()
			c.SetReadDeadline(time.Now().Add(preAuth + 5*time.Second))
			buf := make([]byte, 512)
			for {
				if _, err := c.Read(buf); err != nil {
					if ne, ok := err.(net.Error); ok && ne.Timeout() {
						mu.Lock()
						open++
						mu.Unlock()
					}
					return
				}
			}
		}()
	}
	cut.Wait()
	if open > 0 {
		t.Fatalf("%d idle connections still open %s after the pre-auth timeout", open, 5*time.Second)
	}
	for _, p := range ports {
		c, greeting := smtpGreeting(p.addr, p.implicit)
		if !strings.HasPrefix(greeting, "220 ") {
			t.Errorf("%s after the idle clients were cut: %q, want 220", p.name, greeting)
		}
		if c != nil {
			c.Close()
		}
	}
}

// stillOpen counts the conns that stay silent for wait (the server holds
// them) rather than reading their end.
func stillOpen(conns []net.Conn, wait time.Duration) int {
	n := 0
	for _, c := range conns {
		c.SetReadDeadline(time.Now().Add(wait))
		if _, err := c.Read(make([]byte, 1)); err != nil {
			if ne, ok := err.(net.Error); ok && ne.Timeout() {
				n++
			}
		}
	}
	return n
}
