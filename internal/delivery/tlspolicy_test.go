package delivery_test

import (
	"crypto/sha256"
	"crypto/tls"
	"crypto/x509"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/miekg/dns"
	"github.com/postline/postline/internal/delivery"
	"github.com/postline/postline/internal/dnsclient"
	"github.com/postline/postline/internal/mtasts"
	"github.com/postline/postline/internal/mtasts/mtaststest"
	"github.com/postline/postline/internal/smtptest"
)

// tlsFixture is a fixture whose transport trusts a test CA, with an
// MTA-STS policy server and service, and example.test's MX records.
type tlsFixture struct {
	*fixture
	ca      *smtptest.CA
	web     *mtaststest.Server
	sinkTLS *tls.Config
}

// sinkCert is what the sink presents.
type sinkCert int

const (
	certNone      sinkCert = iota // no STARTTLS
	certValid                     // from the CA, for mx.example.test
	certWrong                     // from the CA, for another name
	certUntrusted                 // self-signed
)

// tlsSetup starts a sink presenting cert, the MX hosts of example.test
// (mxs by preference, default mx.example.test) at its address, and a
// transport trusting the CA with an MTA-STS service.
func tlsSetup(t *testing.T, cert sinkCert, mxs ...string) *tlsFixture {
	t.Helper()
	ca := smtptest.NewCA(t)
	sc := smtptest.Config{}
	switch cert {
	case certValid:
		sc.TLS = ca.ServerTLS(t, "mx.example.test", "mx2.example.test")
	case certWrong:
		sc.TLS = ca.ServerTLS(t, "other.example.net")
	case certUntrusted:
		sc.TLS = smtptest.SelfSignedTLS(t, "mx.example.test")
	}
	web := mtaststest.New(t, ca)
	f := setup(t, sc, func(c *delivery.Config) {
		c.RootCAs = ca.Pool()
	})
	res, err := dnsclient.New(dnsclient.Config{Server: f.dns.Addr(), Timeout: time.Second, CacheSize: -1})
	if err != nil {
		t.Fatal(err)
	}
	svc, err := mtasts.New(mtasts.Config{Resolver: res, Store: &mtaststest.MemStore{}, Port: web.Port(),
		RootCAs: ca.Pool(), AllowPrivate: true})
	if err != nil {
		t.Fatal(err)
	}
	// A second transport with the policy service: setup's has none.
	tr, err := delivery.New(delivery.Config{Resolver: res, MXPort: f.sink.Port(), HeloName: "postline.test",
		DialTimeout: 2 * time.Second, CommandTimeout: 10 * time.Second, AllowPrivate: true,
		RootCAs: ca.Pool(), MTASTS: svc})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { tr.Close() })
	f.tr = tr
	if len(mxs) == 0 {
		mxs = []string{"mx.example.test"}
	}
	for i, mx := range mxs {
		f.dns.AddMX("example.test", uint16(10*(i+1)), mx)
		f.dns.AddA(mx, "127.0.0.1")
	}
	f.dns.AddA("mta-sts.example.test", "127.0.0.1")
	return &tlsFixture{fixture: f, ca: ca, web: web, sinkTLS: sc.TLS}
}

// policy publishes example.test's MTA-STS policy.
func (f *tlsFixture) policy(mode string, mx ...string) {
	body := "version: STSv1\r\nmode: " + mode + "\r\n"
	for _, m := range mx {
		body += "mx: " + m + "\r\n"
	}
	f.web.SetPolicy("example.test", body+"max_age: 86400\r\n")
	f.dns.AddTXT("_mta-sts.example.test", "v=STSv1; id=1;")
}

// tlsa publishes a TLSA record for host (authenticated or not), in a
// signed zone: example.test's MX answer is authenticated.
func (f *tlsFixture) tlsa(host string, authed bool, usage, selector, matching uint8, data []byte) {
	name := "_" + strconv.Itoa(f.sink.Port()) + "._tcp." + host
	f.dns.AddTLSA(name, usage, selector, matching, data)
	f.dns.SetAuthenticated(name, authed)
	f.dns.SetAuthenticated("example.test", true)
}

// leaf is the certificate the sink presents.
func (f *tlsFixture) leaf(t *testing.T) *x509.Certificate {
	t.Helper()
	leaf, err := x509.ParseCertificate(f.sinkTLS.Certificates[0].Certificate[0])
	if err != nil {
		t.Fatal(err)
	}
	return leaf
}

func spki256(c *x509.Certificate) []byte {
	s := sha256.Sum256(c.RawSubjectPublicKeyInfo)
	return s[:]
}

// wantDelivered checks a delivery and its TLS outcome.
func wantDelivered(t *testing.T, f *tlsFixture, r delivery.Route, want delivery.TLSOutcome, reportHas ...string) delivery.Result {
	t.Helper()
	res, err := f.send(t, r, "rcpt@example.test")
	if err != nil {
		t.Fatalf("Send: %v", err)
	}
	got := res.TLS
	got.Report = ""
	if got != want {
		t.Errorf("Result.TLS = %+v, want %+v", res.TLS, want)
	}
	for _, s := range reportHas {
		if !strings.Contains(res.TLS.Report, s) {
			t.Errorf("Result.TLS.Report = %q, want it to say %q", res.TLS.Report, s)
		}
	}
	if len(reportHas) == 0 && res.TLS.Report != "" {
		t.Errorf("Result.TLS.Report = %q, want none", res.TLS.Report)
	}
	if n := len(f.sink.Messages()); n != 1 {
		t.Errorf("sink got %d messages, want 1", n)
	}
	return res
}

// wantDeferred checks a temporary failure whose message says all of has,
// with nothing delivered.
func wantDeferred(t *testing.T, f *tlsFixture, r delivery.Route, enhanced, policy string, has ...string) *delivery.Error {
	t.Helper()
	_, err := f.send(t, r, "rcpt@example.test")
	if err == nil {
		t.Fatal("Send succeeded, want a temporary failure")
	}
	e := asError(t, err)
	if !e.Temporary || e.Enhanced != enhanced || e.RecipientRejected() || e.TLS.Policy != policy {
		t.Errorf("error %v (TLS %+v): want temporary %s under policy %s", e, e.TLS, enhanced, policy)
	}
	for _, s := range has {
		if !strings.Contains(e.Message, s) {
			t.Errorf("error message %q does not say %q", e.Message, s)
		}
	}
	if n := len(f.sink.Messages()); n != 0 {
		t.Errorf("sink got %d messages, want none", n)
	}
	return e
}

var tls13 = "TLS1.3"

func TestMTASTSEnforce(t *testing.T) {
	t.Parallel()
	t.Run("listed MX with a verified certificate", func(t *testing.T) {
		t.Parallel()
		f := tlsSetup(t, certValid)
		f.policy("enforce", "mx.example.test")
		wantDelivered(t, f, direct, delivery.TLSOutcome{Version: tls13, Verified: true, Policy: delivery.PolicyMTASTS})
	})
	t.Run("wildcard pattern", func(t *testing.T) {
		t.Parallel()
		f := tlsSetup(t, certValid)
		f.policy("enforce", "*.example.test")
		wantDelivered(t, f, direct, delivery.TLSOutcome{Version: tls13, Verified: true, Policy: delivery.PolicyMTASTS})
	})
	t.Run("MX not in the policy", func(t *testing.T) {
		t.Parallel()
		f := tlsSetup(t, certValid)
		f.policy("enforce", "mx.elsewhere.test")
		wantDeferred(t, f, direct, "4.7.5", delivery.PolicyMTASTS, "MTA-STS policy of example.test (enforce)", "mx.example.test is not listed")
		if n := f.sessions(); n != 0 {
			t.Errorf("sink saw %d sessions, want none: an MX outside the policy is not contacted", n)
		}
	})
	t.Run("only the listed MX is used", func(t *testing.T) {
		t.Parallel()
		f := tlsSetup(t, certValid, "mx.example.test", "mx2.example.test")
		f.policy("enforce", "mx2.example.test")
		res := wantDelivered(t, f, direct, delivery.TLSOutcome{Version: tls13, Verified: true, Policy: delivery.PolicyMTASTS})
		if res.Host != "mx2.example.test" {
			t.Errorf("delivered to %s, want mx2.example.test (the only MX the policy lists)", res.Host)
		}
	})
	for _, c := range []struct {
		name string
		cert sinkCert
		why  string
	}{
		{"certificate for another name", certWrong, "does not verify"},
		{"certificate from an untrusted issuer", certUntrusted, "does not verify"},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			f := tlsSetup(t, c.cert)
			f.policy("enforce", "mx.example.test")
			wantDeferred(t, f, direct, "4.7.5", delivery.PolicyMTASTS, "MTA-STS policy of example.test (enforce)", c.why)
			if n := f.sessions(); n != 1 {
				t.Errorf("sink saw %d sessions, want 1: no plain-text retry", n)
			}
		})
	}
	t.Run("no STARTTLS", func(t *testing.T) {
		t.Parallel()
		f := tlsSetup(t, certNone)
		f.policy("enforce", "mx.example.test")
		wantDeferred(t, f, direct, "4.7.10", delivery.PolicyMTASTS, "MTA-STS", "does not offer STARTTLS")
	})
	t.Run("turned off for the destination", func(t *testing.T) {
		t.Parallel()
		f := tlsSetup(t, certUntrusted)
		f.policy("enforce", "mx.elsewhere.test")
		r := direct
		r.DirectTLS.DisableMTASTS = true
		wantDelivered(t, f, r, delivery.TLSOutcome{Version: tls13, Policy: delivery.PolicyNone})
	})
	t.Run("mode none", func(t *testing.T) {
		t.Parallel()
		f := tlsSetup(t, certUntrusted)
		f.policy("none")
		wantDelivered(t, f, direct, delivery.TLSOutcome{Version: tls13, Policy: delivery.PolicyNone})
	})
}

func TestMTASTSTesting(t *testing.T) {
	t.Parallel()
	f := tlsSetup(t, certUntrusted)
	f.policy("testing", "mx.elsewhere.test")
	wantDelivered(t, f, direct, delivery.TLSOutcome{Version: tls13, Policy: delivery.PolicyMTASTS},
		"MTA-STS policy of example.test (testing)", "mx.example.test is not listed", "does not verify")

	g := tlsSetup(t, certValid)
	g.policy("testing", "mx.example.test")
	wantDelivered(t, g, direct, delivery.TLSOutcome{Version: tls13, Verified: true, Policy: delivery.PolicyMTASTS})
}

func TestDANE(t *testing.T) {
	t.Parallel()
	t.Run("DANE-EE match, MTA-STS not consulted", func(t *testing.T) {
		t.Parallel()
		f := tlsSetup(t, certUntrusted) // DANE-EE needs no CA
		f.policy("enforce", "mx.elsewhere.test")
		f.tlsa("mx.example.test", true, 3, 1, 1, spki256(f.leaf(t)))
		wantDelivered(t, f, direct, delivery.TLSOutcome{Version: tls13, Verified: true, Policy: delivery.PolicyDANE})
		if n := f.web.Fetches(); n != 0 {
			t.Errorf("the MTA-STS policy was fetched %d times; want it not consulted (RFC 8461 §2)", n)
		}
	})
	t.Run("DANE-TA match", func(t *testing.T) {
		t.Parallel()
		f := tlsSetup(t, certValid)
		sum := sha256.Sum256(f.ca.Cert.Raw)
		f.tlsa("mx.example.test", true, 2, 0, 1, sum[:])
		wantDelivered(t, f, direct, delivery.TLSOutcome{Version: tls13, Verified: true, Policy: delivery.PolicyDANE})
	})
	t.Run("mismatch", func(t *testing.T) {
		t.Parallel()
		f := tlsSetup(t, certValid)
		f.tlsa("mx.example.test", true, 3, 1, 1, []byte("not the key of the sink's certificate!!"))
		wantDeferred(t, f, direct, "4.7.5", delivery.PolicyDANE, "DANE", "matches no TLSA record")
		if n := f.sessions(); n != 1 {
			t.Errorf("sink saw %d sessions, want 1: no plain-text retry", n)
		}
	})
	t.Run("no STARTTLS", func(t *testing.T) {
		t.Parallel()
		f := tlsSetup(t, certNone)
		f.tlsa("mx.example.test", true, 3, 1, 1, []byte("whatever"))
		wantDeferred(t, f, direct, "4.7.10", delivery.PolicyDANE, "DANE", "does not offer STARTTLS")
	})
	t.Run("unauthenticated records are ignored", func(t *testing.T) {
		t.Parallel()
		f := tlsSetup(t, certValid)
		f.tlsa("mx.example.test", false, 3, 1, 1, []byte("not the key"))
		wantDelivered(t, f, direct, delivery.TLSOutcome{Version: tls13, Policy: delivery.PolicyNone})
	})
	t.Run("records of a host named by an unauthenticated MX answer are ignored", func(t *testing.T) {
		t.Parallel()
		f := tlsSetup(t, certValid)
		f.tlsa("mx.example.test", true, 3, 1, 1, []byte("not the key"))
		f.dns.SetAuthenticated("example.test", false) // whoever forged the MX could publish such records
		wantDelivered(t, f, direct, delivery.TLSOutcome{Version: tls13, Policy: delivery.PolicyNone})
	})
	t.Run("only unusable records: encrypted, not verified", func(t *testing.T) {
		t.Parallel()
		f := tlsSetup(t, certUntrusted)
		f.tlsa("mx.example.test", true, 1, 1, 1, []byte("PKIX-EE is unusable for SMTP"))
		wantDelivered(t, f, direct, delivery.TLSOutcome{Version: tls13, Policy: delivery.PolicyDANE})
	})
	t.Run("turned off for the destination", func(t *testing.T) {
		t.Parallel()
		f := tlsSetup(t, certValid)
		f.tlsa("mx.example.test", true, 3, 1, 1, []byte("not the key"))
		r := direct
		r.DirectTLS.DisableDANE = true
		wantDelivered(t, f, r, delivery.TLSOutcome{Version: tls13, Policy: delivery.PolicyNone})
	})
	t.Run("failed lookup at a signed host defers", func(t *testing.T) {
		t.Parallel()
		f := tlsSetup(t, certValid)
		f.dns.SetRcode("_"+strconv.Itoa(f.sink.Port())+"._tcp.mx.example.test", dns.RcodeServerFailure)
		f.dns.SetAuthenticated("example.test", true)
		f.dns.SetAuthenticated("mx.example.test", true)
		wantDeferred(t, f, direct, "4.4.3", delivery.PolicyDANE, "DANE", "TLSA lookup")
	})
	t.Run("failed lookup at an unsigned host is no policy", func(t *testing.T) {
		t.Parallel()
		f := tlsSetup(t, certValid)
		f.dns.SetAuthenticated("example.test", true) // the MX answer is, the host's addresses are not
		f.dns.SetRcode("_"+strconv.Itoa(f.sink.Port())+"._tcp.mx.example.test", dns.RcodeServerFailure)
		wantDelivered(t, f, direct, delivery.TLSOutcome{Version: tls13, Policy: delivery.PolicyNone})
	})
}

func TestTLSModes(t *testing.T) {
	t.Parallel()
	tests := []struct {
		mode  delivery.TLSMode
		cert  sinkCert
		want  *delivery.TLSOutcome // nil: deferred with wantEnh
		enh   string
		plain int // sessions the sink sees
	}{
		{mode: delivery.TLSOpportunistic, cert: certValid, want: &delivery.TLSOutcome{Version: tls13, Verified: true, Policy: "none"}},
		{mode: delivery.TLSOpportunistic, cert: certNone, want: &delivery.TLSOutcome{Policy: "none"}},
		{mode: delivery.TLSOpportunistic, cert: certUntrusted, enh: "4.7.5"},
		{mode: delivery.TLSRequired, cert: certNone, enh: "4.7.10"},
		{mode: delivery.TLSRequired, cert: certWrong, enh: "4.7.5"},
		{mode: delivery.TLSRequiredInsecure, cert: certUntrusted, want: &delivery.TLSOutcome{Version: tls13, Policy: "none"}},
		{mode: delivery.TLSRequiredInsecure, cert: certNone, enh: "4.7.10"},
		{mode: delivery.TLSDisabled, cert: certValid, want: &delivery.TLSOutcome{Policy: "none"}},
	}
	for _, tt := range tests {
		t.Run(string(tt.mode)+"/"+strconv.Itoa(int(tt.cert)), func(t *testing.T) {
			t.Parallel()
			f := tlsSetup(t, tt.cert)
			r := direct
			r.DirectTLS.Mode = tt.mode
			if tt.want != nil {
				wantDelivered(t, f, r, *tt.want)
			} else {
				wantDeferred(t, f, r, tt.enh, delivery.PolicyNone, "TLS mode "+string(tt.mode))
			}
		})
	}
	f := tlsSetup(t, certValid)
	r := direct
	r.DirectTLS.Mode = "Sometimes"
	if _, err := f.send(t, r, "rcpt@example.test"); err == nil || asError(t, err).Enhanced != "5.3.5" {
		t.Errorf("unknown TLS mode: %v, want a permanent 5.3.5 configuration error", err)
	}
}

// A connection opened without a policy is not reused for a domain whose
// policy needs a verified certificate.
func TestPooledSessionMeetsThePolicy(t *testing.T) {
	t.Parallel()
	f := tlsSetup(t, certValid)
	f.dns.AddMX("plain.test", 10, "mx.example.test")
	if res, err := f.send(t, direct, "rcpt@plain.test"); err != nil || res.TLS.Verified {
		t.Fatalf("first Send = %+v, %v; want delivered unverified", res, err)
	}
	f.policy("enforce", "mx.example.test")
	res, err := f.send(t, direct, "rcpt@example.test")
	if err != nil || res.Reused || !res.TLS.Verified || res.TLS.Policy != delivery.PolicyMTASTS {
		t.Fatalf("Send under enforce = %+v, %v; want a new, verified session", res, err)
	}
	// And the verified one serves the domain without a policy.
	if res, err := f.send(t, direct, "rcpt@plain.test"); err != nil || !res.Reused {
		t.Errorf("third Send = %+v, %v; want the verified session reused", res, err)
	}
}
