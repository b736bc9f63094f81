package app_test

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/postline/postline/internal/app"
	"github.com/postline/postline/internal/config"
	"github.com/postline/postline/internal/testutil"
)

// TestAPIOverTLS: with --api-tls the API answers over TLS with the
// certificate of --tls-cert/--tls-key, refuses plain HTTP, and a renewed
// certificate written over the files is served without a restart.
func TestAPIOverTLS(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	certFile, keyFile := filepath.Join(dir, "cert.pem"), filepath.Join(dir, "key.pem")
	pool := x509.NewCertPool()
	write := func(cn string, at time.Time) {
		c, k, parsed := testutil.SelfSignedCert(t, cn)
		pool.AddCert(parsed)
		for f, b := range map[string][]byte{certFile: c, keyFile: k} {
			if err := os.WriteFile(f, b, 0o600); err != nil {
				t.Fatal(err)
			}
			os.Chtimes(f, at, at)
		}
	}
	write("first", time.Now().Add(-time.Minute))

	cfg := config.Default()
	cfg.DataDir = t.TempDir()
	cfg.DatabaseURL = "sqlite:" + filepath.Join(cfg.DataDir, "postline.db")
	cfg.APITLS, cfg.TLSCert, cfg.TLSKey = true, certFile, keyFile
	if err := cfg.Validate(); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	a, err := app.Open(ctx, cfg, nil, app.Options{DKIMKeyBits: 1024})
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go a.Serve(ctx, ln)
	addr := ln.Addr().String()

	served := func() string {
		t.Helper()
		client := &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool}}}
		resp, err := client.Get("https://" + addr + "/healthz")
		if err != nil {
			t.Fatalf("healthz over TLS: %v", err)
		}
		defer resp.Body.Close()
		if resp.StatusCode != 200 {
			t.Fatalf("healthz over TLS: %d", resp.StatusCode)
		}
		return resp.TLS.PeerCertificates[0].Subject.CommonName
	}
	if cn := served(); cn != "first" {
		t.Fatalf("certificate %q, want first", cn)
	}
	if resp, err := (&http.Client{Timeout: 5 * time.Second}).Get("http://" + addr + "/healthz"); err == nil {
		if resp.StatusCode == 200 {
			t.Fatal("plain HTTP answered 200 on the TLS listener")
		}
		resp.Body.Close()
	}

	write("renewed", time.Now())
	deadline := time.Now().Add(10 * time.Second)
	for served() != "renewed" {
		if time.Now().After(deadline) {
			t.Fatal("the renewed certificate is not served 10 s after the files changed")
		}
		time.Sleep(200 * time.Millisecond)
	}

	bad := config.Default()
	bad.APITLS = true
	if err := bad.Validate(); err == nil {
		t.Fatal("--api-tls without --tls-cert/--tls-key accepted")
	}
}
