package simnet_test

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/emersion/go-smtp"
	"github.com/miekg/dns"
	"github.com/postline/postline/internal/dnstest"
	"github.com/postline/postline/internal/simnet"
)

// startTLS opens a session with p from src, upgrades it with STARTTLS
// verifying the certificate for serverName against roots, and sends one
// message (the handshake happens at the first command after STARTTLS).
func startTLS(t *testing.T, p *simnet.Provider, roots *x509.CertPool, serverName string) error {
	t.Helper()
	conn, err := net.DialTimeout("tcp", p.SMTPAddr(), 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	c, err := smtp.NewClientStartTLS(conn, &tls.Config{RootCAs: roots, ServerName: serverName})
	if err != nil {
		t.Fatalf("STARTTLS with %s: %v", p.Name(), err)
	}
	defer c.Close()
	return send(c, "a@sender.test", "x@"+p.Domains()[0])
}

// The STARTTLS certificate verifies against the CA for the provider's MX
// host names, and in each broken mode fails as that mode says.
func TestSTARTTLS(t *testing.T) {
	t.Parallel()
	n := simnet.New(t, simnet.Config{Providers: []simnet.ProviderConfig{
		{Name: "valid", Domains: 2, TLS: simnet.TLSValid},
		{Name: "wrongname", Domains: 2, TLS: simnet.TLSWrongName},
		{Name: "untrusted", Domains: 2, TLS: simnet.TLSUntrusted},
		{Name: "expired", Domains: 2, TLS: simnet.TLSExpired},
		{Name: "permx", Domains: 2, TLS: simnet.TLSValid, PerDomainMX: true},
	}})
	roots := n.CertPool()
	var hostErr x509.HostnameError
	var authErr x509.UnknownAuthorityError
	var invalidErr x509.CertificateInvalidError
	tests := []struct {
		provider, name string
		want           any // nil, or a pointer to the error type expected
	}{
		{"valid", "mx1.valid.simnet.test", nil},
		{"valid", "mx2.valid.simnet.test", nil},
		{"valid", "mx1.other.simnet.test", &hostErr},
		{"wrongname", "mx1.wrongname.simnet.test", &hostErr},
		{"untrusted", "mx1.untrusted.simnet.test", &authErr},
		{"expired", "mx1.expired.simnet.test", &invalidErr},
		{"permx", "d001-permx-example.mx.permx.simnet.test", nil},
		{"permx", "d002-permx-example.mx.permx.simnet.test", nil},
	}
	for _, tt := range tests {
		p := n.Provider(tt.provider)
		err := startTLS(t, p, roots, tt.name)
		switch target := tt.want.(type) {
		case nil:
			if err != nil {
				t.Errorf("%s as %s: %v, want a verified session", tt.provider, tt.name, err)
			}
		case *x509.HostnameError:
			if !errors.As(err, target) {
				t.Errorf("%s as %s: %v, want a host name error", tt.provider, tt.name, err)
			}
		case *x509.UnknownAuthorityError:
			if !errors.As(err, target) {
				t.Errorf("%s as %s: %v, want an unknown authority error", tt.provider, tt.name, err)
			}
		case *x509.CertificateInvalidError:
			if !errors.As(err, target) || target.Reason != x509.Expired {
				t.Errorf("%s as %s: %v, want an expired certificate", tt.provider, tt.name, err)
			}
		}
	}
	msgs := n.Provider("valid").Messages()
	if len(msgs) != 2 || msgs[0].TLS == nil || msgs[0].TLS.ServerName != "mx1.valid.simnet.test" || msgs[0].TLS.Version < tls.VersionTLS12 {
		t.Fatalf("messages over TLS = %+v, want 2 with the TLS state and SNI", msgs)
	}
	if got := msgs[0].TLS.VersionName(); !strings.HasPrefix(got, "TLS 1.") {
		t.Errorf("VersionName() = %q", got)
	}
}

// A message sent in clear has no TLS state, and a provider without TLS
// does not offer STARTTLS.
func TestPlainHasNoTLS(t *testing.T) {
	t.Parallel()
	_, p := one(t, simnet.ProviderConfig{})
	c := client(t, srcA.String(), p)
	if ok, _ := c.Extension("STARTTLS"); ok {
		t.Error("STARTTLS offered with TLSOff")
	}
	if err := send(c, "a@sender.test", "x@d001.prov.example"); err != nil {
		t.Fatal(err)
	}
	if m := p.Messages(); len(m) != 1 || m[0].TLS != nil {
		t.Errorf("messages %+v, want one without TLS", m)
	}
}

// lookup asks the Net's DNS server.
func lookup(t *testing.T, n *simnet.Net, name string, qtype uint16) []dns.RR {
	t.Helper()
	m := new(dns.Msg)
	m.SetQuestion(dns.Fqdn(name), qtype)
	resp, _, err := (&dns.Client{Net: "tcp", Timeout: 2 * time.Second}).Exchange(m, n.DNS().Addr())
	if err != nil {
		t.Fatalf("%s %s: %v", name, dns.TypeToString[qtype], err)
	}
	return resp.Answer
}

// policyClient fetches over HTTPS trusting only the test CA, resolving
// names through the Net's DNS server.
func policyClient(n *simnet.Net, t *testing.T) *http.Client {
	return &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{
		TLSClientConfig: &tls.Config{RootCAs: n.CertPool()},
		DialContext: func(ctx context.Context, network, addr string) (net.Conn, error) {
			host, port, _ := net.SplitHostPort(addr)
			rrs := lookup(t, n, host, dns.TypeA)
			if len(rrs) == 0 {
				return nil, errors.New("no A record for " + host)
			}
			var d net.Dialer
			return d.DialContext(ctx, network, net.JoinHostPort(rrs[0].(*dns.A).A.String(), port))
		},
	}}
}

// The MTA-STS server answers the policy over HTTPS for mta-sts.DOMAIN of
// its domains, with a certificate the CA vouches for, and the DNS has the
// _mta-sts record.
func TestMTASTS(t *testing.T) {
	t.Parallel()
	n := simnet.New(t, simnet.Config{Providers: []simnet.ProviderConfig{
		{Name: "plain", Domains: 2},
		{Name: "sts", Domains: 3, TLS: simnet.TLSValid, MTASTS: &simnet.MTASTSPolicy{ID: "20261201"}},
		{Name: "testing", Domains: 2, MTASTS: &simnet.MTASTSPolicy{Mode: "testing", MX: []string{"*.elsewhere.test"}, MaxAge: time.Hour}},
	}})
	hc := policyClient(n, t)
	get := func(host string) (int, string, error) {
		resp, err := hc.Get("https://" + net.JoinHostPort(host, strconv.Itoa(n.MTASTSPort())) + "/.well-known/mta-sts.txt")
		if err != nil {
			return 0, "", err
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b), nil
	}

	code, text, err := get("mta-sts.d002.sts.example")
	want := "version: STSv1\r\nmode: enforce\r\nmx: mx1.sts.simnet.test\r\nmx: mx2.sts.simnet.test\r\nmax_age: 86400\r\n"
	if err != nil || code != 200 || text != want {
		t.Errorf("policy of d002.sts.example = %d %q, %v; want 200 %q", code, text, err, want)
	}
	code, text, err = get("mta-sts.d001.testing.example")
	want = "version: STSv1\r\nmode: testing\r\nmx: *.elsewhere.test\r\nmax_age: 3600\r\n"
	if err != nil || code != 200 || text != want {
		t.Errorf("policy of d001.testing.example = %d %q, %v; want 200 %q", code, text, err, want)
	}
	if f := n.Provider("sts").PolicyFetches(); f["d002.sts.example"] != 1 || len(f) != 1 {
		t.Errorf("PolicyFetches() = %v, want d002.sts.example once", f)
	}
	if txt := lookup(t, n, "_mta-sts.d001.sts.example", dns.TypeTXT); len(txt) != 1 ||
		strings.Join(txt[0].(*dns.TXT).Txt, "") != "v=STSv1; id=20261201;" {
		t.Errorf("_mta-sts TXT = %v", txt)
	}
	if txt := lookup(t, n, "_mta-sts.d001.plain.example", dns.TypeTXT); len(txt) != 0 {
		t.Errorf("a provider without a policy publishes %v", txt)
	}
	// The certificate is for the provider's own domains only, and the
	// server answers only for them.
	if _, _, err := get("mta-sts.d001.testing.example"); err != nil {
		t.Fatal(err)
	}
	req, _ := http.NewRequest("GET", "https://"+net.JoinHostPort("mta-sts.d001.sts.example", strconv.Itoa(n.MTASTSPort()))+"/.well-known/mta-sts.txt", nil)
	req.Host = "mta-sts.d001.testing.example"
	if resp, err := hc.Do(req); err != nil || resp.StatusCode != 404 {
		t.Errorf("sts asked for another provider's domain: %v, %v; want 404", resp, err)
	} else {
		resp.Body.Close()
	}
	sts := n.Provider("sts")
	conn, err := tls.Dial("tcp", net.JoinHostPort(sts.Addr().String(), strconv.Itoa(n.MTASTSPort())),
		&tls.Config{RootCAs: n.CertPool(), ServerName: "mta-sts.d001.testing.example"})
	var hostErr x509.HostnameError
	if !errors.As(err, &hostErr) {
		t.Errorf("sts's certificate as mta-sts.d001.testing.example: %v, want a host name error", err)
	}
	if conn != nil {
		conn.Close()
	}
}

// DANE records are TLSA records at _25._tcp.MXHOST matching the provider's
// certificate (usage 3) or the CA (usage 2), or nothing; the Authenticate
// hook is called for every name whose answers must be authenticated.
func TestDANE(t *testing.T) {
	t.Parallel()
	authed := map[string]bool{}
	n := simnet.New(t, simnet.Config{
		Providers: []simnet.ProviderConfig{
			{Name: "ee", Domains: 2, TLS: simnet.TLSValid, DANE: &simnet.DANE{Usage: 3}},
			{Name: "ta", Domains: 2, TLS: simnet.TLSValid, DANE: &simnet.DANE{Usage: 2}},
			{Name: "bad", Domains: 2, TLS: simnet.TLSValid, DANE: &simnet.DANE{Usage: 3, Mismatch: true}},
			{Name: "none", Domains: 2, TLS: simnet.TLSValid},
		},
		// Called during Start only, so no lock is needed.
		Authenticate: func(_ *dnstest.Server, name string) { authed[dns.CanonicalName(name)] = true },
	})
	// The records are at port 25 and at MXPort alike.
	tlsa := func(host string) *dns.TLSA {
		rrs := lookup(t, n, "_25._tcp."+host, dns.TypeTLSA)
		if len(rrs) != 1 {
			t.Fatalf("TLSA of %s: %v, want one", host, rrs)
		}
		at25 := rrs[0].(*dns.TLSA)
		name := "_" + strconv.Itoa(n.MXPort()) + "._tcp." + host
		rrs = lookup(t, n, name, dns.TypeTLSA)
		if len(rrs) != 1 || rrs[0].(*dns.TLSA).Certificate != at25.Certificate || rrs[0].(*dns.TLSA).Usage != at25.Usage {
			t.Fatalf("TLSA at %s: %v, want the same as at port 25 (%v)", name, rrs, at25)
		}
		return at25
	}
	for _, host := range []string{"mx1.ee.simnet.test", "mx2.ee.simnet.test"} {
		rr := tlsa(host)
		if rr.Usage != 3 || rr.Verify(n.Provider("ee").Certificate()) != nil {
			t.Errorf("TLSA of %s = %v, want usage 3 matching the provider's certificate", host, rr)
		}
	}
	if rr := tlsa("mx1.ta.simnet.test"); rr.Usage != 2 || rr.Verify(n.CA()) != nil || rr.Verify(n.Provider("ta").Certificate()) == nil {
		t.Errorf("TLSA of the ta provider = %v, want usage 2 matching the CA only", rr)
	}
	if rr := tlsa("mx1.bad.simnet.test"); rr.Verify(n.Provider("bad").Certificate()) == nil || rr.Verify(n.CA()) == nil {
		t.Errorf("mismatching TLSA %v matches", rr)
	}
	if rrs := lookup(t, n, "_25._tcp.mx1.none.simnet.test", dns.TypeTLSA); len(rrs) != 0 {
		t.Errorf("a provider without DANE publishes %v", rrs)
	}
	mxPortName := "_" + strconv.Itoa(n.MXPort()) + "._tcp.mx1.ee.simnet.test."
	for _, name := range []string{"d001.ee.example.", "mx1.ee.simnet.test.", "_25._tcp.mx1.ee.simnet.test.", mxPortName, "d002.ta.example."} {
		if !authed[name] {
			t.Errorf("Authenticate not called for %s", name)
		}
	}
	if authed["d001.none.example."] {
		t.Error("Authenticate called for a domain without DANE")
	}
}
