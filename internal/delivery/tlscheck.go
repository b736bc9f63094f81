package delivery

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"time"

	"github.com/postline/postline/internal/dane"
)

// tlsCheck checks an MX host's certificate during the STARTTLS handshake
// as its plan says, and records what it found. A failure it returns
// aborts the handshake (with a bad_certificate alert) before anything is
// sent under it.
type tlsCheck struct {
	plan  tlsPlan
	host  string
	roots *x509.CertPool // nil: the system's

	version  uint16
	verified bool
	report   string // testing: why the certificate would be refused
}

// config is the client configuration of the handshake. Go's own
// verification is off because what to verify, and whether a failure
// refuses, depends on the plan; verify does it.
func (c *tlsCheck) config() *tls.Config {
	return &tls.Config{ServerName: c.host, InsecureSkipVerify: true, VerifyConnection: c.verify}
}

func (c *tlsCheck) verify(cs tls.ConnectionState) error {
	c.version = cs.Version
	p := c.plan
	switch {
	case p.policy == PolicyDANE && len(p.tlsa) > 0:
		err := dane.Verify(p.tlsa, cs.PeerCertificates, []string{c.host, p.domain}, time.Now())
		if err != nil {
			return p.refuse(c.host, "4.7.5", "the certificate of "+c.host+" matches no TLSA record", err)
		}
		c.verified = true
	case p.pkix || p.testing:
		err := verifyPKIX(cs, c.host, c.roots)
		switch {
		case err == nil:
			c.verified = true
		case p.pkix:
			return p.refuse(c.host, "4.7.5", "the certificate of "+c.host+" does not verify: "+err.Error(), err)
		default:
			c.report = "the certificate of " + c.host + " does not verify: " + err.Error()
		}
	}
	return nil
}

// outcome is the session's TLS outcome after a completed handshake.
func (c *tlsCheck) outcome() TLSOutcome {
	return TLSOutcome{Version: versionName(c.version), Verified: c.verified, Policy: c.plan.policy}
}

// verifyPKIX verifies the server's certificate for host against roots,
// with the intermediates it sent (RFC 8461 §4.2, and RFC 6125 names).
func verifyPKIX(cs tls.ConnectionState, host string, roots *x509.CertPool) error {
	if len(cs.PeerCertificates) == 0 {
		return errors.New("no certificate")
	}
	inter := x509.NewCertPool()
	for _, c := range cs.PeerCertificates[1:] {
		inter.AddCert(c)
	}
	_, err := cs.PeerCertificates[0].Verify(x509.VerifyOptions{DNSName: host, Roots: roots, Intermediates: inter})
	return err
}

// versionName writes a TLS version as the delivery log does ("TLS1.3").
func versionName(v uint16) string {
	switch v {
	case 0:
		return ""
	case tls.VersionTLS13:
		return "TLS1.3"
	case tls.VersionTLS12:
		return "TLS1.2"
	case tls.VersionTLS11:
		return "TLS1.1"
	case tls.VersionTLS10:
		return "TLS1.0"
	}
	return "unknown"
}
