// Package mtaststest serves MTA-STS policies over HTTPS on 127.0.0.1 for
// tests: one server for any number of domains, each answered by the Host
// it is asked for (mta-sts.DOMAIN) with a certificate from a test CA.
package mtaststest

import (
	"crypto/tls"
	"errors"
	"io"
	"log"
	"net"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/postline/postline/internal/smtptest"
)

// Response is what the server answers for one domain.
type Response struct {
	Body        string
	Status      int    // default 200
	ContentType string // default "text/plain"
	Location    string // sent with a 3xx Status
	// Endless, when set, keeps the body going after Body: a line every
	// 10 ms until the client hangs up (a hostile or broken policy host).
	Endless bool
}

// Server is a running policy server. Its methods are safe for concurrent
// use.
type Server struct {
	t       testing.TB
	ca      *smtptest.CA
	ln      net.Listener
	fetches atomic.Int64

	mu    sync.Mutex
	resp  map[string]Response        // domain → answer
	certs map[string]tls.Certificate // mta-sts.DOMAIN → certificate
}

// New starts a server whose certificates come from ca, and stops it when
// the test ends.
func New(t testing.TB, ca *smtptest.CA) *Server {
	t.Helper()
	s := &Server{t: t, ca: ca, resp: map[string]Response{}, certs: map[string]tls.Certificate{}}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s.ln = tls.NewListener(ln, &tls.Config{GetCertificate: s.certificate, MinVersion: tls.VersionTLS12})
	// Handshakes that tests make fail on purpose are not worth a log line.
	srv := &http.Server{Handler: http.HandlerFunc(s.serve), ErrorLog: log.New(io.Discard, "", 0)}
	go srv.Serve(s.ln)
	t.Cleanup(func() { srv.Close() })
	return s
}

// Port is the port to give as the MTA-STS port.
func (s *Server) Port() int { return s.ln.Addr().(*net.TCPAddr).Port }

// Fetches counts the requests served.
func (s *Server) Fetches() int { return int(s.fetches.Load()) }

// Set makes the server answer r for domain's policy, with a certificate
// for mta-sts.DOMAIN from the CA.
func (s *Server) Set(domain string, r Response) {
	s.t.Helper()
	host := "mta-sts." + domain
	s.mu.Lock()
	_, have := s.certs[host]
	s.mu.Unlock()
	var cert tls.Certificate
	if !have {
		cert = s.ca.Certificate(s.t, host)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if !have {
		s.certs[host] = cert
	}
	s.resp[domain] = r
}

// SetPolicy is Set with a 200 text/plain body.
func (s *Server) SetPolicy(domain, body string) { s.Set(domain, Response{Body: body}) }

func (s *Server) certificate(hello *tls.ClientHelloInfo) (*tls.Certificate, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if c, ok := s.certs[hello.ServerName]; ok {
		return &c, nil
	}
	return nil, errors.New("mtaststest: no certificate for " + hello.ServerName)
}

func (s *Server) serve(w http.ResponseWriter, r *http.Request) {
	s.fetches.Add(1)
	host, _, err := net.SplitHostPort(r.Host)
	if err != nil {
		host = r.Host
	}
	domain, ok := strings.CutPrefix(host, "mta-sts.")
	s.mu.Lock()
	resp, known := s.resp[domain]
	s.mu.Unlock()
	if !ok || !known || r.URL.Path != "/.well-known/mta-sts.txt" {
		http.NotFound(w, r)
		return
	}
	ct := resp.ContentType
	if ct == "" {
		ct = "text/plain"
	}
	w.Header().Set("Content-Type", ct)
	if resp.Location != "" {
		w.Header().Set("Location", resp.Location)
	}
	if resp.Status != 0 {
		w.WriteHeader(resp.Status)
	}
	w.Write([]byte(resp.Body))
	for resp.Endless {
		if _, err := io.WriteString(w, "mx: more.example\n"); err != nil {
			return
		}
		w.(http.Flusher).Flush()
		select {
		case <-r.Context().Done():
			return
		case <-time.After(10 * time.Millisecond):
		}
	}
}
