package tlscert

import (
	"crypto/x509"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/postline/postline/internal/testutil"
)

// WritePair writes a self-signed certificate for 127.0.0.1 named cn.
func writePair(t *testing.T, dir, cn string, at time.Time) (string, string) {
	t.Helper()
	certPEM, keyPEM, _ := testutil.SelfSignedCert(t, cn)
	cf, kf := filepath.Join(dir, "cert.pem"), filepath.Join(dir, "key.pem")
	for f, b := range map[string][]byte{cf: certPEM, kf: keyPEM} {
		if err := os.WriteFile(f, b, 0o600); err != nil {
			t.Fatal(err)
		}
		os.Chtimes(f, at, at)
	}
	return cf, kf
}

func TestReloadsChangedFiles(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	cf, kf := writePair(t, dir, "first", time.Now().Add(-time.Minute))
	r, err := New(cf, kf)
	if err != nil {
		t.Fatal(err)
	}
	cn := func() string {
		c, _ := r.GetCertificate(nil)
		x, _ := x509.ParseCertificate(c.Certificate[0])
		return x.Subject.CommonName
	}
	if cn() != "first" {
		t.Fatal("not the first certificate")
	}
	writePair(t, dir, "second", time.Now())
	r.mu.Lock()
	r.checked = time.Time{} // as if the recheck interval had passed
	r.mu.Unlock()
	if got := cn(); got != "second" {
		t.Fatalf("after the files changed: %q, want second", got)
	}
	if _, err := New(filepath.Join(dir, "missing.pem"), kf); err == nil {
		t.Fatal("a missing certificate file loaded")
	}
}
