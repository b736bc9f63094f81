package mailauth_test

import (
	"context"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"encoding/base64"
	"net/netip"
	"strings"
	"testing"

	"github.com/emersion/go-msgauth/authres"
	"github.com/miekg/dns"

	"github.com/postline/postline/internal/dnsclient"
	"github.com/postline/postline/internal/dnstest"
	"github.com/postline/postline/internal/mailauth"
	"github.com/postline/postline/internal/message"
)

type rig struct {
	dns *dnstest.Server
	res *dnsclient.Resolver
}

func setup(t *testing.T) rig {
	t.Helper()
	srv := dnstest.New(t)
	res, err := dnsclient.New(dnsclient.Config{Server: srv.Addr(), CacheSize: -1})
	if err != nil {
		t.Fatal(err)
	}
	return rig{dns: srv, res: res}
}

// sign signs msg for domain with a new key the rig's DNS publishes under
// selector "s1".
func (r rig) sign(t *testing.T, domain, msg string) []byte {
	t.Helper()
	key, err := rsa.GenerateKey(rand.Reader, 1024)
	if err != nil {
		t.Fatal(err)
	}
	priv, _ := x509.MarshalPKCS8PrivateKey(key)
	pub, _ := x509.MarshalPKIXPublicKey(&key.PublicKey)
	r.dns.AddTXT("s1._domainkey."+domain, "v=DKIM1; k=rsa; p="+base64.StdEncoding.EncodeToString(pub))
	s, err := message.NewSigner(domain, "s1", priv)
	if err != nil {
		t.Fatal(err)
	}
	signed, err := s.Sign([]byte(msg))
	if err != nil {
		t.Fatal(err)
	}
	return signed
}

const plain = "From: Ann <ann@sender.example>\r\nTo: help@shop.example.com\r\nSubject: Hi\r\nMessage-ID: <1@sender.example>\r\n\r\nHello\r\n"

var client = netip.MustParseAddr("127.0.0.9")

// A message signed by its From domain, from an address its SPF record
// names, with a DMARC policy: everything passes, and the header says so.
func TestCheckPasses(t *testing.T) {
	t.Parallel()
	r := setup(t)
	r.dns.AddTXT("sender.example", "v=spf1 ip4:127.0.0.0/24 -all")
	r.dns.AddTXT("_dmarc.sender.example", "v=DMARC1; p=reject")
	msg := r.sign(t, "sender.example", plain)
	got := mailauth.Check(context.Background(), r.res, mailauth.Input{RemoteIP: client, Helo: "mx.sender.example", MailFrom: "bounce@sender.example", Message: msg})
	if got.SPF.Result != "pass" || got.SPF.Domain != "sender.example" {
		t.Errorf("SPF = %+v, want pass for sender.example", got.SPF)
	}
	if len(got.DKIM) != 1 || got.DKIM[0].Result != "pass" || got.DKIM[0].Domain != "sender.example" {
		t.Errorf("DKIM = %+v, want one pass by sender.example", got.DKIM)
	}
	if got.DMARC.Result != "pass" || got.DMARC.Policy != "reject" || got.DMARC.Domain != "sender.example" {
		t.Errorf("DMARC = %+v, want pass under p=reject", got.DMARC)
	}
	h := got.Header("mx.postline.test")
	id, results, err := authres.Parse(strings.NewReplacer("\r\n", "", "\t", " ").Replace(h))
	if err != nil || id != "mx.postline.test" || len(results) != 3 {
		t.Fatalf("header %q parses as %q, %d results, %v", h, id, len(results), err)
	}
	for _, want := range []string{"spf=pass smtp.mailfrom=sender.example", "dkim=pass header.d=sender.example", "dmarc=pass header.from=sender.example"} {
		if !strings.Contains(h, want) {
			t.Errorf("header %q lacks %q", h, want)
		}
	}
}

// A forgery: the From domain's name on a message from an address its SPF
// refuses, signed by a key that is not the one published, altered after
// signing. Every check fails, and DMARC reports the policy the owner asks.
func TestCheckForgery(t *testing.T) {
	t.Parallel()
	r := setup(t)
	r.dns.AddTXT("sender.example", "v=spf1 ip4:192.0.2.0/24 -all")
	r.dns.AddTXT("_dmarc.sender.example", "v=DMARC1; p=quarantine")
	signed := r.sign(t, "sender.example", plain)
	forged := []byte(strings.Replace(string(signed), "Hello", "Send money", 1))
	got := mailauth.Check(context.Background(), r.res, mailauth.Input{RemoteIP: client, Helo: "x", MailFrom: "ceo@sender.example", Message: forged})
	if got.SPF.Result != "fail" {
		t.Errorf("SPF = %+v, want fail", got.SPF)
	}
	if len(got.DKIM) != 1 || got.DKIM[0].Result != "fail" {
		t.Errorf("DKIM = %+v, want fail (body altered)", got.DKIM)
	}
	if got.DMARC.Result != "fail" || got.DMARC.Policy != "quarantine" {
		t.Errorf("DMARC = %+v, want fail under p=quarantine", got.DMARC)
	}
	// Signed by another domain, SPF passing for another domain: nothing
	// is aligned with the From domain.
	r.dns.AddTXT("relay.example", "v=spf1 ip4:127.0.0.9 -all")
	other := r.sign(t, "relay.example", plain)
	got = mailauth.Check(context.Background(), r.res, mailauth.Input{RemoteIP: client, Helo: "x", MailFrom: "b@relay.example", Message: other})
	if got.SPF.Result != "pass" || got.DKIM[0].Result != "pass" || got.DMARC.Result != "fail" {
		t.Errorf("unaligned passes: SPF %+v, DKIM %+v, DMARC %+v; want pass, pass, fail", got.SPF, got.DKIM, got.DMARC)
	}
}

// Relaxed alignment takes a subdomain; a subdomain's policy comes from
// the organizational domain's record (its sp=).
func TestCheckSubdomains(t *testing.T) {
	t.Parallel()
	r := setup(t)
	r.dns.AddTXT("mail.sender.example", "v=spf1 ip4:127.0.0.9 -all")
	r.dns.AddTXT("_dmarc.sender.example", "v=DMARC1; p=none; sp=reject")
	msg := strings.Replace(plain, "ann@sender.example", "ann@news.sender.example", 1)
	got := mailauth.Check(context.Background(), r.res, mailauth.Input{RemoteIP: client, Helo: "x", MailFrom: "b@mail.sender.example", Message: []byte(msg)})
	if got.DMARC.Result != "pass" || got.DMARC.Policy != "reject" || got.DMARC.Domain != "news.sender.example" {
		t.Errorf("DMARC = %+v, want pass (relaxed) under sp=reject", got.DMARC)
	}
	r.dns.Remove("_dmarc.sender.example", dns.TypeTXT)
	r.dns.AddTXT("_dmarc.sender.example", "v=DMARC1; p=reject; aspf=s")
	got = mailauth.Check(context.Background(), r.res, mailauth.Input{RemoteIP: client, Helo: "x", MailFrom: "b@mail.sender.example", Message: []byte(msg)})
	if got.DMARC.Result != "fail" {
		t.Errorf("DMARC with aspf=s = %+v, want fail", got.DMARC)
	}
}

// Nothing published: none everywhere. A failing DNS server: temperror,
// never pass or fail.
func TestCheckNoneAndTempError(t *testing.T) {
	t.Parallel()
	r := setup(t)
	r.dns.AddA("sender.example", "127.0.0.1")
	got := mailauth.Check(context.Background(), r.res, mailauth.Input{RemoteIP: client, Helo: "x", MailFrom: "a@sender.example", Message: []byte(plain)})
	if got.SPF.Result != "none" || len(got.DKIM) != 0 || got.DKIMSummary() != "none" || got.DMARC.Result != "none" {
		t.Errorf("nothing published: %+v", got)
	}
	if h := got.Header("mx.postline.test"); !strings.Contains(h, "dkim=none") {
		t.Errorf("header %q lacks dkim=none", h)
	}
	r.dns.SetRcode("sender.example", dns.RcodeServerFailure)
	r.dns.SetRcode("_dmarc.sender.example", dns.RcodeServerFailure)
	got = mailauth.Check(context.Background(), r.res, mailauth.Input{RemoteIP: client, Helo: "x", MailFrom: "a@sender.example", Message: []byte(plain)})
	if got.SPF.Result != "temperror" || got.DMARC.Result != "temperror" {
		t.Errorf("SERVFAIL: SPF %+v, DMARC %+v; want temperror", got.SPF, got.DMARC)
	}
	// The null sender: SPF checks the HELO name.
	r.dns.AddTXT("mx.other.example", "v=spf1 ip4:127.0.0.9 -all")
	got = mailauth.Check(context.Background(), r.res, mailauth.Input{RemoteIP: client, Helo: "mx.other.example", Message: []byte(plain)})
	if got.SPF.Result != "pass" || got.SPF.Scope != "helo" || !strings.Contains(got.Header("h"), "smtp.helo=mx.other.example") {
		t.Errorf("null sender: %+v %q", got.SPF, got.Header("h"))
	}
}

func TestUntrust(t *testing.T) {
	t.Parallel()
	msg := "Received: x\r\nAuthentication-Results: MX.Postline.Test;\r\n\tspf=pass\r\nauthentication-results: other.example; dkim=pass\r\n" +
		"Authentication-Results: mx.postline.test 1; dmarc=pass\r\nSubject: s\r\n\r\nAuthentication-Results: mx.postline.test; body\r\n"
	got := string(mailauth.Untrust([]byte(msg), "mx.postline.test"))
	want := "Received: x\r\nX-Untrusted-Authentication-Results: MX.Postline.Test;\r\n\tspf=pass\r\nauthentication-results: other.example; dkim=pass\r\n" +
		"X-Untrusted-Authentication-Results: mx.postline.test 1; dmarc=pass\r\nSubject: s\r\n\r\nAuthentication-Results: mx.postline.test; body\r\n"
	if got != want {
		t.Errorf("Untrust =\n%q\nwant\n%q", got, want)
	}
	if s := "Subject: none\n\nbody"; string(mailauth.Untrust([]byte(s), "x")) != s {
		t.Error("a message without the field changed")
	}
}

func FuzzUntrust(f *testing.F) {
	f.Add([]byte("Authentication-Results: a; spf=pass\r\n\r\nbody"), "a")
	f.Add([]byte("A: b\n c\nAuthentication-Results:a\n\n"), "a")
	f.Fuzz(func(t *testing.T, msg []byte, id string) {
		out := mailauth.Untrust(msg, id)
		// Only field names change, each into the longer untrusted name.
		if n := len(out) - len(msg); n < 0 || n%(len("X-Untrusted-Authentication-Results")-len("Authentication-Results")) != 0 {
			t.Fatalf("Untrust(%q) = %q", msg, out)
		}
		if again := mailauth.Untrust(out, id); string(again) != string(out) {
			t.Fatalf("Untrust is not idempotent on %q", msg)
		}
	})
}

// TestPolicy: the policy for mail From a domain is its own record's p=,
// else its organizational domain's sp= (or p=); none published is "";
// a record that cannot be read counts as none; a failing lookup is an
// error, never a policy.
func TestPolicy(t *testing.T) {
	t.Parallel()
	r := setup(t)
	r.dns.AddTXT("_dmarc.strict.example", "v=DMARC1; p=reject; sp=quarantine")
	r.dns.AddTXT("_dmarc.own.strict.example", "v=DMARC1; p=none")
	r.dns.AddTXT("_dmarc.lax.example", "v=DMARC1; p=none")
	r.dns.AddTXT("_dmarc.broken.example", "v=DMARC1; p=sometimes")
	r.dns.SetRcode("_dmarc.down.example", dns.RcodeServerFailure)
	for domain, want := range map[string]string{"strict.example": "reject", "mail.strict.example": "quarantine",
		"OWN.strict.example.": "none", "lax.example": "none", "none.example": "", "broken.example": ""} {
		if got, err := mailauth.Policy(context.Background(), r.res, domain); err != nil || got != want {
			t.Errorf("Policy(%s) = %q, %v; want %q", domain, got, err, want)
		}
	}
	if got, err := mailauth.Policy(context.Background(), r.res, "down.example"); err == nil || got != "" {
		t.Errorf("Policy of a domain whose lookup fails = %q, %v; want an error", got, err)
	}
}
