// Package tlscert serves a certificate and key from PEM files and picks up
// new files without a restart: a renewal (certbot, an ACME client, a
// secret mount) replaces the files and the next handshakes use the new
// certificate. Listeners share one Reloader through Config.
package tlscert

import (
	"crypto/tls"
	"fmt"
	"os"
	"sync"
	"time"
)

// recheck is how often the files' modification times are looked at, at
// most (on a handshake, never in the background).
const recheck = 2 * time.Second

// Reloader holds the certificate loaded from CertFile and KeyFile.
type Reloader struct {
	certFile, keyFile string

	mu      sync.Mutex
	cert    *tls.Certificate
	stamp   [2]time.Time // modification times of the loaded files
	checked time.Time
	// OnError, when set, hears of files that changed but did not load; the
	// previous certificate stays in use.
	OnError func(error)
}

// New loads the pair once, failing with a message naming the files.
func New(certFile, keyFile string) (*Reloader, error) {
	r := &Reloader{certFile: certFile, keyFile: keyFile}
	if err := r.load(); err != nil {
		return nil, err
	}
	return r, nil
}

func (r *Reloader) stamps() ([2]time.Time, error) {
	var st [2]time.Time
	for i, f := range []string{r.certFile, r.keyFile} {
		fi, err := os.Stat(f)
		if err != nil {
			return st, err
		}
		st[i] = fi.ModTime()
	}
	return st, nil
}

func (r *Reloader) load() error {
	st, err := r.stamps()
	if err != nil {
		return fmt.Errorf("tls-cert/tls-key: %w", err)
	}
	c, err := tls.LoadX509KeyPair(r.certFile, r.keyFile)
	if err != nil {
		return fmt.Errorf("tls-cert %s / tls-key %s: %w", r.certFile, r.keyFile, err)
	}
	r.cert, r.stamp, r.checked = &c, st, time.Now()
	return nil
}

// GetCertificate is tls.Config.GetCertificate: the current certificate,
// reloaded first when the files changed.
func (r *Reloader) GetCertificate(*tls.ClientHelloInfo) (*tls.Certificate, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if time.Since(r.checked) >= recheck {
		r.checked = time.Now()
		if st, err := r.stamps(); err == nil && st != r.stamp {
			if err := r.load(); err != nil && r.OnError != nil {
				r.OnError(err)
			}
		}
	}
	return r.cert, nil
}

// Config is a server TLS configuration (TLS 1.2 or later) on r.
func (r *Reloader) Config() *tls.Config {
	return &tls.Config{MinVersion: tls.VersionTLS12, GetCertificate: r.GetCertificate}
}
