package simnet

import (
	"crypto/tls"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"strings"
	"time"
)

// policyPath is where RFC 8461 §3.2 puts the policy.
const policyPath = "/.well-known/mta-sts.txt"

// startMTASTS serves the provider's MTA-STS policies over HTTPS on ln,
// with a certificate from the test CA for mta-sts.DOMAIN of every domain.
func (p *Provider) startMTASTS(ln net.Listener) error {
	names := make([]string, 0, len(p.domains))
	for _, d := range p.domains {
		names = append(names, "mta-sts."+d)
	}
	if len(names) == 0 {
		names = append(names, "mta-sts."+p.cfg.Name+".simnet.test")
	}
	cert, err := p.net.ca.issue(names, time.Now().Add(-time.Hour), time.Now().Add(7*24*time.Hour), false)
	if err != nil {
		return err
	}
	p.web = &http.Server{
		Handler:           http.HandlerFunc(p.servePolicy),
		TLSConfig:         &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12},
		ReadHeaderTimeout: 10 * time.Second,
		ErrorLog:          log.New(io.Discard, "", 0),
	}
	go p.web.ServeTLS(ln, "", "")
	return nil
}

// servePolicy answers GET /.well-known/mta-sts.txt for mta-sts.DOMAIN
// hosts of the provider's domains; anything else is a 404.
func (p *Provider) servePolicy(w http.ResponseWriter, r *http.Request) {
	host := strings.ToLower(r.Host)
	if h, _, err := net.SplitHostPort(host); err == nil {
		host = h
	}
	domain, ok := strings.CutPrefix(host, "mta-sts.")
	if !ok || r.URL.Path != policyPath || p.mx[domain] == nil {
		http.NotFound(w, r)
		return
	}
	p.mu.Lock()
	p.fetches[domain]++
	p.mu.Unlock()
	w.Header().Set("Content-Type", "text/plain")
	io.WriteString(w, p.Policy(domain))
}

// Policy is the MTA-STS policy text served for domain ("" without a
// policy or for a domain the provider does not host).
func (p *Provider) Policy(domain string) string {
	m := p.cfg.MTASTS
	if m == nil || p.mx[domain] == nil {
		return ""
	}
	var b strings.Builder
	fmt.Fprintf(&b, "version: STSv1\r\nmode: %s\r\n", m.Mode)
	mx := m.MX
	if len(mx) == 0 {
		mx = p.mx[domain]
	}
	for _, h := range mx {
		fmt.Fprintf(&b, "mx: %s\r\n", h)
	}
	fmt.Fprintf(&b, "max_age: %d\r\n", int(m.MaxAge.Seconds()))
	return b.String()
}
