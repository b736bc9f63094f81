package message_test

import (
	"bytes"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"encoding/base64"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/emersion/go-msgauth/dkim"

	"github.com/postline/postline/internal/dnsclient"
	"github.com/postline/postline/internal/dnstest"
	"github.com/postline/postline/internal/domain"
	"github.com/postline/postline/internal/message"
)

// dkimFixture is a sending domain with a fresh key, a local authoritative
// DNS server and a resolver aimed at it.
type dkimFixture struct {
	dom domain.Domain
	dns *dnstest.Server
	res *dnsclient.Resolver
}

// setup makes a 1024-bit key (the RFC 8301 minimum, fast to generate) and
// publishes it for nothing yet; tests choose where.
func setup(t testing.TB) *dkimFixture {
	t.Helper()
	key, err := rsa.GenerateKey(rand.Reader, 1024)
	if err != nil {
		t.Fatal(err)
	}
	priv, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	pub, err := x509.MarshalPKIXPublicKey(&key.PublicKey)
	if err != nil {
		t.Fatal(err)
	}
	srv := dnstest.New(t)
	res, err := dnsclient.New(dnsclient.Config{Server: srv.Addr(), Timeout: 2 * time.Second, CacheSize: -1})
	if err != nil {
		t.Fatal(err)
	}
	return &dkimFixture{
		dom: domain.Domain{
			Name:           "example.com",
			DKIMSelector:   "pl202603",
			DKIMPrivateKey: priv,
			DKIMPublicKey:  base64.StdEncoding.EncodeToString(pub),
			AuthDomain:     "bounces.example.org",
		},
		dns: srv,
		res: res,
	}
}

// verify checks msg's signatures, fetching keys from the local DNS server.
func (f *dkimFixture) verify(t *testing.T, msg []byte) []*dkim.Verification {
	t.Helper()
	vs, err := dkim.VerifyWithOptions(bytes.NewReader(msg), &dkim.VerifyOptions{
		LookupTXT: func(name string) ([]string, error) { return f.res.LookupTXT(t.Context(), name) },
	})
	if err != nil {
		t.Fatalf("VerifyWithOptions: %v", err)
	}
	if len(vs) != 1 {
		t.Fatalf("got %d verifications, want 1", len(vs))
	}
	return vs
}

// signedMessage builds a message with every signable header present.
func signedMessage(t *testing.T, s *message.Signer) []byte {
	t.Helper()
	p := base()
	p.FromName = "Zoë Ünicode 🎉"
	p.ReplyTo = "support@example.com"
	p.HTML = html
	p.ListUnsubscribe = "<https://t.example.com/u/abc123>"
	p.Attachments = []message.Attachment{{Filename: "a.pdf", ContentType: "application/pdf", Data: pdf}}
	msg, err := message.Build(p)
	if err != nil {
		t.Fatalf("Build: %v", err)
	}
	signed, err := s.Sign(msg)
	if err != nil {
		t.Fatalf("Sign: %v", err)
	}
	checkLines(t, signed)
	return signed
}

func TestSignVerifies(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		d    func(domain.Domain) string // the signing domain
	}{
		{"sending domain", func(d domain.Domain) string { return d.Name }},
		{"authentication domain", func(d domain.Domain) string { return d.AuthDomain }},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			f := setup(t)
			d := tc.d(f.dom)
			// The key is published only under d, so a pass proves the
			// verifier looked where d= points.
			f.dns.AddTXT(f.dom.DKIMSelector+"._domainkey."+d, f.dom.DKIMRecordValue())
			s, err := message.NewSigner(d, f.dom.DKIMSelector, f.dom.DKIMPrivateKey)
			if err != nil {
				t.Fatalf("NewSigner: %v", err)
			}
			signed := signedMessage(t, s)
			if !bytes.HasPrefix(signed, []byte("DKIM-Signature: ")) {
				t.Fatalf("signature not prepended:\n%.300s", signed)
			}
			sig := unfoldedSignature(signed)
			for _, tag := range []string{"a=rsa-sha256", "c=relaxed/relaxed", "d=" + d, "s=" + f.dom.DKIMSelector} {
				if !strings.Contains(sig, tag) {
					t.Errorf("signature lacks %s: %s", tag, sig)
				}
			}
			v := f.verify(t, signed)[0]
			if v.Err != nil || v.Domain != d {
				t.Fatalf("verification: d=%s err=%v, want pass for d=%s", v.Domain, v.Err, d)
			}
			for _, k := range []string{"from", "to", "subject", "date", "message-id", "reply-to", "mime-version", "content-type", "list-unsubscribe", "list-unsubscribe-post"} {
				if n := countFold(v.HeaderKeys, k); n != 2 {
					t.Errorf("h= lists %s %d times, want 2 (signed and oversigned): %v", k, n, v.HeaderKeys)
				}
			}
		})
	}
}

// TestSignTamper: content changes fail; the changes relaxed
// canonicalization exists for (refolding, header-name case, trailing
// white space) still pass.
func TestSignTamper(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name     string
		tamper   func([]byte) []byte
		wantPass bool
	}{
		{"untouched", func(m []byte) []byte { return m }, true},
		{"header case and spacing", func(m []byte) []byte {
			return bytes.Replace(m, []byte("\r\nDate: "), []byte("\r\nDATE:    "), 1)
		}, true},
		{"trailing white space in body", func(m []byte) []byte {
			return bytes.Replace(m, []byte("Hello,\r\n"), []byte("Hello,   \r\n"), 1)
		}, true},
		{"body changed", func(m []byte) []byte {
			return bytes.Replace(m, []byte("Thanks for your order."), []byte("Thanks for your orders"), 1)
		}, false},
		{"attachment changed", func(m []byte) []byte {
			return bytes.Replace(m, []byte("JVBERi0x"), []byte("JVBERi0y"), 1)
		}, false},
		{"subject changed", func(m []byte) []byte {
			return bytes.Replace(m, []byte("Subject: Your receipt"), []byte("Subject: Your refund"), 1)
		}, false},
		{"second From added", func(m []byte) []byte {
			return append([]byte("From: ceo@example.com\r\n"), m...)
		}, false},
		{"second List-Unsubscribe added", func(m []byte) []byte {
			return append([]byte("List-Unsubscribe: <https://evil.example/>\r\n"), m...)
		}, false},
	}
	f := setup(t)
	f.dns.AddTXT(f.dom.DKIMSelector+"._domainkey."+f.dom.Name, f.dom.DKIMRecordValue())
	s, err := message.NewSigner(f.dom.Name, f.dom.DKIMSelector, f.dom.DKIMPrivateKey)
	if err != nil {
		t.Fatalf("NewSigner: %v", err)
	}
	signed := signedMessage(t, s)
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			msg := tc.tamper(bytes.Clone(signed))
			if tc.name != "untouched" && bytes.Equal(msg, signed) {
				t.Fatal("tamper changed nothing")
			}
			v := f.verify(t, msg)[0]
			if pass := v.Err == nil; pass != tc.wantPass {
				t.Errorf("verification err = %v, want pass=%v", v.Err, tc.wantPass)
			}
		})
	}
}

func TestNewSignerRejects(t *testing.T) {
	t.Parallel()
	f := setup(t)
	ecKey, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	ecDER, _ := x509.MarshalPKCS8PrivateKey(ecKey)
	_, edKey, _ := ed25519.GenerateKey(rand.Reader)
	edDER, _ := x509.MarshalPKCS8PrivateKey(edKey)
	tests := []struct {
		name, domain, selector string
		key                    []byte
	}{
		{"empty domain", "", "s1", f.dom.DKIMPrivateKey},
		{"domain with space", "exa mple.com", "s1", f.dom.DKIMPrivateKey},
		{"domain with semicolon", "example.com;x=1", "s1", f.dom.DKIMPrivateKey},
		{"empty selector", "example.com", "", f.dom.DKIMPrivateKey},
		{"garbage key", "example.com", "s1", []byte("not a key")},
		{"ECDSA key", "example.com", "s1", ecDER},
		{"Ed25519 key", "example.com", "s1", edDER},
	}
	for _, tc := range tests {
		if _, err := message.NewSigner(tc.domain, tc.selector, tc.key); err == nil {
			t.Errorf("%s: NewSigner succeeded, want an error", tc.name)
		}
	}
}

func TestSignNeedsFrom(t *testing.T) {
	t.Parallel()
	f := setup(t)
	s, err := message.NewSigner(f.dom.Name, f.dom.DKIMSelector, f.dom.DKIMPrivateKey)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.Sign([]byte("Subject: x\r\n\r\nbody\r\n")); err == nil {
		t.Error("Sign of a message without From succeeded")
	}
}

func unfoldedSignature(msg []byte) string {
	h, _, _ := bytes.Cut(msg, []byte("\r\n\r\n"))
	var sig []string
	for i, line := range strings.Split(string(h), "\r\n") {
		if i > 0 && !strings.HasPrefix(line, " ") && !strings.HasPrefix(line, "\t") {
			break
		}
		sig = append(sig, strings.TrimSpace(line))
	}
	return strings.Join(sig, "")
}

func countFold(keys []string, k string) int {
	return len(slices.DeleteFunc(slices.Clone(keys), func(s string) bool { return !strings.EqualFold(s, k) }))
}
