package dane_test

import (
	"crypto/sha256"
	"crypto/sha512"
	"crypto/x509"
	"errors"
	"testing"
	"time"

	"github.com/postline/postline/internal/dane"
	"github.com/postline/postline/internal/dnsclient"
	"github.com/postline/postline/internal/smtptest"
)

// chainOf returns the parsed certificates of a CA-issued server
// certificate for host: the leaf, then the CA.
func chainOf(t *testing.T, ca *smtptest.CA, host string) []*x509.Certificate {
	t.Helper()
	cert := ca.Certificate(t, host)
	var chain []*x509.Certificate
	for _, der := range cert.Certificate {
		c, err := x509.ParseCertificate(der)
		if err != nil {
			t.Fatal(err)
		}
		chain = append(chain, c)
	}
	return chain
}

func sum256(b []byte) []byte { s := sha256.Sum256(b); return s[:] }
func sum512(b []byte) []byte { s := sha512.Sum512(b); return s[:] }

func TestVerify(t *testing.T) {
	t.Parallel()
	ca, other := smtptest.NewCA(t), smtptest.NewCA(t)
	chain := chainOf(t, ca, "mx.example.test")
	leaf, caCert := chain[0], chain[1]
	names := []string{"mx.example.test", "example.test"}
	tests := []struct {
		name  string
		recs  []dnsclient.TLSA
		names []string
		now   time.Time
		ok    bool
	}{
		{name: "DANE-EE SPKI SHA-256 (3 1 1)", recs: []dnsclient.TLSA{rec(3, 1, 1, sum256(leaf.RawSubjectPublicKeyInfo))}, ok: true},
		{name: "DANE-EE full certificate exact (3 0 0)", recs: []dnsclient.TLSA{rec(3, 0, 0, leaf.Raw)}, ok: true},
		{name: "DANE-EE full certificate SHA-512 (3 0 2)", recs: []dnsclient.TLSA{rec(3, 0, 2, sum512(leaf.Raw))}, ok: true},
		{name: "DANE-EE ignores names and dates (RFC 7672 §3.1.1)", recs: []dnsclient.TLSA{rec(3, 1, 1, sum256(leaf.RawSubjectPublicKeyInfo))},
			names: []string{"elsewhere.test"}, now: time.Now().AddDate(1, 0, 0), ok: true},
		{name: "DANE-EE of another key", recs: []dnsclient.TLSA{rec(3, 1, 1, sum256(other.Cert.RawSubjectPublicKeyInfo))}},
		{name: "one matching record among several", recs: []dnsclient.TLSA{
			rec(3, 1, 1, []byte("stale")), rec(3, 1, 1, sum256(leaf.RawSubjectPublicKeyInfo))}, ok: true},
		{name: "DANE-TA SPKI SHA-256 (2 1 1)", recs: []dnsclient.TLSA{rec(2, 1, 1, sum256(caCert.RawSubjectPublicKeyInfo))}, ok: true},
		{name: "DANE-TA full certificate SHA-256 (2 0 1)", recs: []dnsclient.TLSA{rec(2, 0, 1, sum256(caCert.Raw))}, ok: true},
		{name: "DANE-TA, certificate for another name", recs: []dnsclient.TLSA{rec(2, 0, 1, sum256(caCert.Raw))},
			names: []string{"mx.other.test"}},
		{name: "DANE-TA, certificate expired", recs: []dnsclient.TLSA{rec(2, 0, 1, sum256(caCert.Raw))},
			now: time.Now().AddDate(1, 0, 0)},
		{name: "DANE-TA of another CA", recs: []dnsclient.TLSA{rec(2, 0, 1, sum256(other.Cert.Raw))}},
		{name: "DANE-TA record of the leaf is no anchor", recs: []dnsclient.TLSA{rec(2, 0, 1, sum256(leaf.Raw))}},
		{name: "PKIX-EE is not usable for SMTP", recs: []dnsclient.TLSA{rec(1, 1, 1, sum256(leaf.RawSubjectPublicKeyInfo))}},
		{name: "PKIX-TA is not usable for SMTP", recs: []dnsclient.TLSA{rec(0, 0, 1, sum256(caCert.Raw))}},
		{name: "unknown matching type", recs: []dnsclient.TLSA{rec(3, 1, 3, sum256(leaf.RawSubjectPublicKeyInfo))}},
		{name: "unknown selector", recs: []dnsclient.TLSA{rec(3, 2, 1, sum256(leaf.RawSubjectPublicKeyInfo))}},
	}
	for _, tt := range tests {
		n, now := tt.names, tt.now
		if n == nil {
			n = names
		}
		if now.IsZero() {
			now = time.Now()
		}
		err := dane.Verify(tt.recs, chain, n, now)
		if (err == nil) != tt.ok || err != nil && !errors.Is(err, dane.ErrNoMatch) {
			t.Errorf("%s: Verify = %v, want ok %v (and ErrNoMatch otherwise)", tt.name, err, tt.ok)
		}
	}
	if err := dane.Verify([]dnsclient.TLSA{rec(3, 0, 0, leaf.Raw)}, nil, names, time.Now()); err == nil {
		t.Error("Verify with no certificate = nil, want an error")
	}
}

func TestUsable(t *testing.T) {
	t.Parallel()
	recs := []dnsclient.TLSA{rec(0, 0, 1, nil), rec(1, 1, 1, nil), rec(2, 1, 1, nil), rec(3, 0, 0, nil), rec(3, 1, 2, nil), rec(3, 2, 1, nil), rec(4, 1, 1, nil), rec(2, 1, 9, nil)}
	got := dane.Usable(recs)
	if len(got) != 3 || got[0].Usage != 2 || got[1].Usage != 3 || got[2].MatchingType != 2 {
		t.Errorf("Usable = %+v, want 2 1 1, 3 0 0, 3 1 2", got)
	}
}

func rec(usage, selector, matching uint8, data []byte) dnsclient.TLSA {
	return dnsclient.TLSA{Usage: usage, Selector: selector, MatchingType: matching, Data: data}
}
