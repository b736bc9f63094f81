// Package apitest starts a real Postline (the same app.App the binary runs)
// on 127.0.0.1 with a local DNS server, for end-to-end tests over HTTP.
// Every response a test reads is checked against the OpenAPI document.
package apitest

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/postline/postline/internal/app"
	"github.com/postline/postline/internal/config"
	"github.com/postline/postline/internal/dnstest"
	"github.com/postline/postline/internal/domain"
	"github.com/postline/postline/internal/store"
	"github.com/postline/postline/internal/testutil"
)

// Env is one running server and what tests need to drive it.
type Env struct {
	t      testing.TB
	URL    string
	App    *app.App
	DNS    *dnstest.Server
	Config config.Config
	spec   *spec
}

// Start runs a server on a fresh database of dialect d. edit may change the
// configuration before it starts.
func Start(t testing.TB, d store.Dialect, edit func(*config.Config)) *Env {
	t.Helper()
	return StartWith(t, d, edit, app.Options{})
}

// StartWith is Start with app options (a clock, say); DKIM keys are
// 1024-bit unless opts say otherwise.
func StartWith(t testing.TB, d store.Dialect, edit func(*config.Config), opts app.Options) *Env {
	t.Helper()
	if opts.DKIMKeyBits == 0 {
		opts.DKIMKeyBits = 1024
	}
	dns := dnstest.New(t)
	cfg := config.Default()
	cfg.DataDir = t.TempDir()
	cfg.DatabaseURL = testutil.DatabaseURL(t, d)
	if d == store.SQLite {
		cfg.DatabaseURL = "sqlite:" + filepath.Join(cfg.DataDir, "postline.db")
	}
	cfg.DNSServer = dns.Addr()
	cfg.Addr = "127.0.0.1:0"
	cfg.ShutdownTimeout = 10 * time.Second
	cfg.DeliveryAllowPrivate = true // the tests' MX hosts are local sinks; a test of the guard turns it off
	if edit != nil {
		edit(&cfg)
	}
	if err := cfg.Validate(); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	a, err := app.Open(ctx, cfg, nil, opts)
	if err != nil {
		cancel()
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- a.Serve(ctx, ln) }()
	t.Cleanup(func() {
		// A connection the client dialled but never used stays "new" on the
		// server, and Shutdown waits up to 5 s for such connections: close
		// the client's spare connections first.
		noRedirects.CloseIdleConnections()
		cancel()
		if err := <-done; err != nil {
			t.Errorf("serve: %v", err)
		}
		a.Close()
	})
	return &Env{t: t, URL: "http://" + ln.Addr().String(), App: a, DNS: dns, Config: cfg, spec: loadSpec(t)}
}

// User is an account with a key.
type User struct {
	Login, Key string
	ID         int64
}

// Auth returns the Authorization header value.
func (u User) Auth() string {
	return "Basic " + base64.StdEncoding.EncodeToString([]byte(u.Login+":"+u.Key))
}

// NewUser creates an account and a key through the services.
func (e *Env) NewUser(login string) User {
	e.t.Helper()
	ctx := context.Background()
	a, err := e.App.Accounts.CreateUser(ctx, login)
	if err != nil {
		e.t.Fatal(err)
	}
	key, _, err := e.App.Accounts.CreateKey(ctx, login, "test")
	if err != nil {
		e.t.Fatal(err)
	}
	return User{Login: login, Key: key, ID: a.ID}
}

// NewDomain adds a verified direct-delivery domain for u.
func (e *Env) NewDomain(u User, name string) domain.Domain {
	e.t.Helper()
	ctx := context.Background()
	d, err := e.App.Domains.Add(ctx, domain.AddParams{AccountID: u.ID, Name: name, Delivery: domain.Delivery{Mode: domain.ModeDirect}, Trusted: true})
	if err != nil {
		e.t.Fatal(err)
	}
	if d, _, err = e.App.Domains.Verify(ctx, d, true); err != nil {
		e.t.Fatal(err)
	}
	return d
}

// Response is a finished request.
type Response struct {
	*http.Response
	Body []byte
	JSON map[string]any // nil unless the body is a JSON object
}

// Request describes one call.
type Request struct {
	Method, Path string
	Auth         string // Authorization header; empty = none
	Body         any    // marshalled to JSON unless it is []byte or string
	Header       http.Header
	// Host, when set, is sent as the Host header (tracking domains).
	Host string
}

// noRedirects returns redirects as they are: a test checks where a click
// URL points and must never follow it off the machine.
var noRedirects = &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}

// Do sends r and validates the response against the OpenAPI document.
func (e *Env) Do(r Request) *Response {
	e.t.Helper()
	return e.DoAt(e.URL, r)
}

// DoAt is Do against another server (base: "http://host:port"), with the
// same checks.
func (e *Env) DoAt(base string, r Request) *Response {
	e.t.Helper()
	var body io.Reader
	var raw []byte
	switch b := r.Body.(type) {
	case nil:
	case []byte:
		raw = b
	case string:
		raw = []byte(b)
	default:
		var err error
		if raw, err = json.Marshal(b); err != nil {
			e.t.Fatal(err)
		}
	}
	if raw != nil {
		body = bytes.NewReader(raw)
	}
	req, err := http.NewRequest(r.Method, base+r.Path, body)
	if err != nil {
		e.t.Fatal(err)
	}
	for k, v := range r.Header {
		req.Header[k] = v
	}
	if raw != nil && req.Header.Get("Content-Type") == "" {
		req.Header.Set("Content-Type", "application/json")
	}
	if r.Auth != "" {
		req.Header.Set("Authorization", r.Auth)
	}
	if r.Host != "" {
		req.Host = r.Host
	}
	resp, err := noRedirects.Do(req)
	if err != nil {
		e.t.Fatal(err)
	}
	defer resp.Body.Close()
	out := &Response{Response: resp}
	if out.Body, err = io.ReadAll(resp.Body); err != nil {
		e.t.Fatal(err)
	}
	if strings.HasPrefix(resp.Header.Get("Content-Type"), "application/json") && len(out.Body) > 0 && out.Body[0] == '{' {
		if err := json.Unmarshal(out.Body, &out.JSON); err != nil {
			e.t.Fatalf("%s %s: bad JSON %q: %v", r.Method, r.Path, out.Body, err)
		}
	}
	// On a tenant's tracking domain only /t/ paths are served; the
	// document describes the API on the service's own host.
	offAPIHost := r.Host != "" && !strings.HasPrefix(r.Path, "/t/") && resp.StatusCode == http.StatusNotFound
	if err := e.spec.validate(req, raw, resp, out.Body); err != nil && !offAPIHost {
		e.t.Errorf("%s %s → %d: response does not match the OpenAPI document: %v\nbody: %s", r.Method, r.Path, resp.StatusCode, err, out.Body)
	}
	return out
}
