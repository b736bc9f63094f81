package app_test

import (
	"bufio"
	"crypto/tls"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/smtp"
	"strings"
	"testing"
	"time"

	"github.com/postline/postline/internal/config"
	"github.com/postline/postline/internal/store"
)

// smtpPort is one of the three SMTP doors.
type smtpPort struct {
	name     string
	addr     string
	implicit bool // TLS from the first byte
}

func smtpPorts(e *sendEnv) []smtpPort {
	return []smtpPort{{"inbound", e.App.Inbound.Addr(), false}, {"submission", e.App.Submission.Addr(false), false},
		{"submissions", e.App.Submission.Addr(true), true}}
}

// dialGreeted connects and reads the greeting line; the reader goes on after it.
func dialGreeted(t *testing.T, p smtpPort) (net.Conn, *bufio.Reader, string) {
	t.Helper()
	c, err := net.DialTimeout("tcp", p.addr, 5*time.Second)
	if err != nil {
		t.Fatalf("%s: %v", p.name, err)
	}
	if p.implicit {
		c = tls.Client(c, &tls.Config{InsecureSkipVerify: true}) //nolint:gosec // the server's self-signed loopback certificate
	}
	t.Cleanup(func() { c.Close() })
	c.SetReadDeadline(time.Now().Add(10 * time.Second))
	r := bufio.NewReader(c)
	line, _ := r.ReadString('\n')
	return c, r, strings.TrimSpace(line)
}

// readyWithin fails unless GET /readyz answers 200 within d.
func readyWithin(t *testing.T, url string, d time.Duration) {
	t.Helper()
	client := &http.Client{Timeout: d, Transport: &http.Transport{DisableKeepAlives: true}}
	start := time.Now()
	resp, err := client.Get(url + "/readyz")
	if err != nil {
		t.Fatalf("/readyz: %v after %s", err, time.Since(start))
	}
	resp.Body.Close()
	if resp.StatusCode != 200 {
		t.Fatalf("/readyz: %d", resp.StatusCode)
	}
}

// closedWithin reads until the server closes c and returns what it said
// last and how long it took; it fails if c stays open past limit.
func closedWithin(t *testing.T, c net.Conn, r *bufio.Reader, limit time.Duration) (string, time.Duration) {
	t.Helper()
	start := time.Now()
	c.SetReadDeadline(start.Add(limit))
	var last string
	for {
		line, err := r.ReadString('\n')
		if line != "" {
			last = strings.TrimSpace(line)
		}
		if err != nil {
			if ne, ok := err.(net.Error); ok && ne.Timeout() {
				t.Fatalf("connection still open after %s (last line %q)", limit, last)
			}
			return last, time.Since(start)
		}
	}
}

// Every SMTP door holds at most --smtp-max-connections-per-ip connections
// from one address (the next one reads 421 4.7.0 and is closed), the API
// answers meanwhile, and a client that does not authenticate (or, on the
// inbound port, name a delivery) within --smtp-pre-auth-timeout is cut.
func TestSMTPListenersBoundPerAddressAndPreAuthTime(t *testing.T) {
	t.Parallel()
	const perIP, preAuth = 4, 1500 * time.Millisecond
	e := startSubmission(t, store.SQLite, func(c *config.Config) {
		c.SMTPListen = "127.0.0.1:0"
		c.SMTPMaxConnectionsPerIP, c.SMTPPreAuthTimeout, c.SMTPCommandTimeout = perIP, preAuth, time.Minute
	})
	type held struct {
		c net.Conn
		r *bufio.Reader
	}
	var idle []held
	firstOpened := time.Now()
	for _, p := range smtpPorts(e) {
		for i := range perIP {
			c, r, greeting := dialGreeted(t, p)
			if !strings.HasPrefix(greeting, "220 ") {
				t.Fatalf("%s connection %d: greeting %q, want 220", p.name, i+1, greeting)
			}
			idle = append(idle, held{c, r})
		}
		c, r, greeting := dialGreeted(t, p)
		want := "421 4.7.0 Too many connections from your address (at most 4 at once); close one and try again later"
		if greeting != want {
			t.Fatalf("%s connection %d: %q, want %q", p.name, perIP+1, greeting, want)
		}
		if last, _ := closedWithin(t, c, r, 2*time.Second); last != "" {
			t.Fatalf("%s: the refused connection said %q after its 421", p.name, last)
		}
		readyWithin(t, e.URL, time.Second)
	}
	for i, h := range idle {
		last, _ := closedWithin(t, h.c, h.r, preAuth+3*time.Second)
		if !strings.HasPrefix(last, "421 4.4.2") {
			t.Errorf("an idle client was closed with %q, want 421 4.4.2 (idle timeout)", last)
		}
		if took := time.Since(firstOpened); i == 0 && took < preAuth-100*time.Millisecond {
			t.Fatalf("the first idle client was closed %s after connecting, before the %s pre-auth timeout", took, preAuth)
		}
	}
	for _, p := range smtpPorts(e) { // their places came back
		if _, _, greeting := dialGreeted(t, p); !strings.HasPrefix(greeting, "220 ") {
			t.Fatalf("%s after the idle clients were cut: %q, want 220", p.name, greeting)
		}
	}
}

// Past AUTH a client may pause longer than the pre-auth timeout; an
// account holds at most --submission-sessions-per-account sessions (454
// 4.7.0 at AUTH past it), and a closed session gives its place back.
func TestSubmissionSessionsPerAccount(t *testing.T) {
	t.Parallel()
	const preAuth = time.Second
	e := startSubmission(t, store.SQLite, func(c *config.Config) {
		c.SubmissionSessionsPerAccount, c.SMTPPreAuthTimeout, c.SMTPCommandTimeout = 2, preAuth, time.Minute
	})
	auth := smtp.PlainAuth("", e.user.Login, e.user.Key, "127.0.0.1")
	first, err := dialSubmission(t, e, false, auth)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := dialSubmission(t, e, true, auth); err != nil {
		t.Fatal(err)
	}
	third, err := dialSubmission(t, e, false, auth)
	want := "Too many sessions open for this account (at most 2 at once); close one and try again"
	if replyCode(err) != 454 || !strings.Contains(err.Error(), "4.7.0 "+want) {
		t.Fatalf("third session's AUTH: %v, want 454 4.7.0 %s", err, want)
	}
	third.Close()
	time.Sleep(preAuth + 500*time.Millisecond)
	if err := first.Noop(); err != nil {
		t.Fatalf("an authenticated session paused past the pre-auth timeout was cut: %v", err)
	}
	first.Quit()
	deadline := time.Now().Add(5 * time.Second)
	for {
		c, err := dialSubmission(t, e, false, auth)
		if err == nil {
			c.Quit()
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("AUTH after a session ended: %v, want accepted", err)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// The API holds at most --http-max-connections. Idle ones (keep-alive
// between requests, or none sent yet) make way for a newcomer, oldest
// first, so /readyz answers at once however many idle connections are
// held (a client still sending its request's headers is idle too, to
// net/http: slow headers make way); connections serving a request (here
// log streams) do not, and past the bound of those a newcomer reads a 503
// naming the setting.
func TestHTTPListenerBounded(t *testing.T) {
	t.Parallel()
	const max = 16
	e := startSend(t, store.SQLite, false, func(c *config.Config) { c.HTTPMaxConnections = max })
	u := strings.TrimPrefix(e.URL, "http://")
	dial := func() net.Conn {
		c, err := net.Dial("tcp", u)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Close() })
		return c
	}
	var idle []net.Conn
	for range max {
		idle = append(idle, dial())
	}
	time.Sleep(100 * time.Millisecond) // accepted, all idle
	readyWithin(t, e.URL, time.Second)
	idle[0].SetReadDeadline(time.Now().Add(time.Second))
	if _, err := idle[0].Read(make([]byte, 1)); isTimeout(err) {
		t.Error("the connection idle longest is still open after /readyz took a place")
	}
	for _, c := range idle {
		c.Close()
	}

	time.Sleep(200 * time.Millisecond) // the closed idle ones' places given back
	var busy []net.Conn                // each holding a log stream open
	for i := range max {
		c := dial()
		fmt.Fprintf(c, "GET /api/domains/%s/log/stream?follow=true HTTP/1.1\r\nHost: x\r\nAuthorization: %s\r\n\r\n", e.dom.Name, e.user.Auth())
		c.SetReadDeadline(time.Now().Add(5 * time.Second))
		if status, _ := bufio.NewReader(c).ReadString('\n'); !strings.HasPrefix(status, "HTTP/1.1 200") {
			t.Fatalf("log stream %d: %q", i+1, status)
		}
		busy = append(busy, c)
	}
	c := dial()
	c.SetReadDeadline(time.Now().Add(5 * time.Second))
	status, err := bufio.NewReader(c).ReadString('\n')
	if !strings.HasPrefix(status, "HTTP/1.1 503") {
		t.Fatalf("a newcomer with %d requests in progress: %q (%v), want 503 naming --http-max-connections", max, status, err)
	}
	for _, b := range busy {
		b.Close()
	}
	deadline := time.Now().Add(5 * time.Second)
	for {
		resp, err := (&http.Client{Timeout: time.Second}).Get(e.URL + "/readyz")
		if err == nil && resp.StatusCode == 200 {
			resp.Body.Close()
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("/readyz after the busy connections closed: %v", err)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func isTimeout(err error) bool {
	ne, ok := err.(net.Error)
	return ok && ne.Timeout()
}

// TestHTTPListenerBoundedPerAddress: one client address holds at most
// --http-max-connections-per-ip connections; past it a connection reads a
// 503 naming the setting, and another address's /readyz is answered.
func TestHTTPListenerBoundedPerAddress(t *testing.T) {
	t.Parallel()
	const perIP = 4
	e := startSend(t, store.SQLite, false, func(c *config.Config) { c.HTTPMaxConnectionsPerIP = perIP })
	u := strings.TrimPrefix(e.URL, "http://")
	d := net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP("127.0.0.2")}}
	var refused []string
	for range 3 * perIP {
		c, err := d.Dial("tcp", u)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		c.SetReadDeadline(time.Now().Add(500 * time.Millisecond))
		b, err := io.ReadAll(c)
		if !isTimeout(err) {
			refused = append(refused, string(b))
		}
	}
	if len(refused) != 2*perIP {
		t.Fatalf("%d of %d connections from one address refused, want %d", len(refused), 3*perIP, 2*perIP)
	}
	for _, r := range refused {
		if !strings.HasPrefix(r, "HTTP/1.1 503 ") || !strings.Contains(r, "--http-max-connections-per-ip") || !strings.Contains(r, "Retry-After: 1") {
			t.Fatalf("a refused connection read %q, want a 503 naming --http-max-connections-per-ip", r)
		}
	}
	resp, err := (&http.Client{Timeout: time.Second}).Get(e.URL + "/readyz")
	if err != nil || resp.StatusCode != 200 {
		t.Fatalf("/readyz from another address while one holds its bound: %v %v", resp, err)
	}
	resp.Body.Close()
}

// At --smtp-max-connections the session that has waited longest without
// authenticating is closed for a newcomer, so that unauthenticated
// sessions cannot lock tenants out (the second outside review held the
// whole bound from 50 addresses); authenticated sessions are never
// closed for another, and when every place is held by one the newcomer
// reads 421 4.3.2.
func TestSMTPTotalBoundClosesTheOldestUnauthenticated(t *testing.T) {
	t.Parallel()
	const max = 4
	e := startSubmission(t, store.SQLite, func(c *config.Config) {
		c.SMTPMaxConnections, c.SMTPMaxConnectionsPerIP, c.SubmissionSessionsPerAccount = max, 100, 100
	})
	p := smtpPort{"submission", e.App.Submission.Addr(false), false}
	type idle struct {
		c net.Conn
		r *bufio.Reader
	}
	var waiting []idle
	for i := range max {
		c, r, greeting := dialGreeted(t, p)
		if !strings.HasPrefix(greeting, "220 ") {
			t.Fatalf("idle connection %d: %q", i+1, greeting)
		}
		defer c.Close()
		waiting = append(waiting, idle{c, r})
	}
	auth := smtp.PlainAuth("", e.user.Login, e.user.Key, "127.0.0.1")
	var sessions []*smtp.Client
	for i := range max {
		c, err := dialSubmission(t, e, false, auth)
		if err != nil {
			t.Fatalf("a tenant's session %d with every place held by unauthenticated clients: %v, want accepted", i+1, err)
		}
		defer c.Close()
		sessions = append(sessions, c)
		closedWithin(t, waiting[i].c, waiting[i].r, 2*time.Second) // the oldest unauthenticated one made way
	}
	c, _, greeting := dialGreeted(t, p)
	defer c.Close()
	if want := fmt.Sprintf("421 4.3.2 Too many connections to this server (at most %d at once); try again later", max); greeting != want {
		t.Fatalf("with every place held by authenticated sessions: %q, want %q", greeting, want)
	}
	for i, s := range sessions {
		if err := s.Noop(); err != nil {
			t.Errorf("authenticated session %d was closed for another: %v", i+1, err)
		}
	}
}

// The inbound listener takes mail from anyone: sessions that named a
// valid bounce address and then only send NOOPs (the third outside review
// held all 1,000 places so, and bounces stopped being taken) make way for
// a newcomer, those of the address holding the most first, so another
// MTA's bounce is still taken.
func TestInboundBoundClosesSessionsThatHoldPlaces(t *testing.T) {
	t.Parallel()
	const max = 4
	e := startSubmission(t, store.SQLite, func(c *config.Config) {
		c.SMTPListen = "127.0.0.1:0"
		c.SMTPMaxConnections, c.SMTPMaxConnectionsPerIP = max, 100
	})
	bounce := bounceAddress(t, e)
	var holders []*smtp.Client
	for i := range max {
		c := dialInbound(t, e, "127.0.0.2")
		defer c.Close()
		if err := c.Mail(""); err != nil {
			t.Fatal(err)
		}
		if err := c.Rcpt(bounce); err != nil {
			t.Fatalf("holder %d naming the bounce address: %v", i+1, err)
		}
		holders = append(holders, c)
	}
	mta := dialInbound(t, e, "127.0.0.3")
	defer mta.Close()
	dsn := "From: MAILER-DAEMON@mx.rcpt.example.net\r\nTo: " + bounce + "\r\nSubject: Undelivered\r\n\r\nsorry\r\n"
	if err := submit(mta, "", []string{bounce}, dsn); err != nil {
		t.Fatalf("another MTA's bounce with every place held by sessions that named a recipient: %v, want taken", err)
	}
	if err := holders[0].Noop(); err == nil {
		t.Error("the oldest holder's session is still open after a newcomer took its place")
	}
}

// Requests that promise a body and never send it (the third outside
// review held all 2,000 places so: net/http waited up to 5 minutes to
// discard the body, the connections busy and not closable) end their
// wait 2 s after the handler is done (time for a client that is sending
// to finish): /readyz answers then, every place having been taken.
func TestHTTPUnsentBodiesDoNotHoldPlaces(t *testing.T) {
	t.Parallel()
	const max = 16
	e := startSend(t, store.SQLite, false, func(c *config.Config) { c.HTTPMaxConnections = max })
	u := strings.TrimPrefix(e.URL, "http://")
	for i := range max {
		c, err := net.Dial("tcp", u)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		fmt.Fprintf(c, "GET /readyz HTTP/1.1\r\nHost: x\r\nContent-Length: 200000\r\n\r\n")
		if i == 0 {
			defer func() { // answered once the body's grace is over
				c.SetReadDeadline(time.Now().Add(5 * time.Second))
				if status, _ := bufio.NewReader(c).ReadString('\n'); !strings.HasPrefix(status, "HTTP/1.1 200") {
					t.Errorf("the first request: %q, want its answer", status)
				}
			}()
		}
	}
	time.Sleep(2500 * time.Millisecond) // the grace for the rest of a body (2 s), not 5 minutes
	readyWithin(t, e.URL, time.Second)
}
