package message_test

import (
	"bytes"
	"crypto/ed25519"
	"crypto/rand"
	"crypto/x509"
	"encoding/base64"
	"strings"
	"testing"

	"github.com/emersion/go-msgauth/dkim"

	"github.com/postline/postline/internal/message"
)

// With an Ed25519 key added (RFC 8463), a message carries two signatures,
// RSA on top, and both verify against the keys in DNS; tampering breaks
// both.
func TestSignEd25519BesideRSA(t *testing.T) {
	t.Parallel()
	f := setup(t)
	pub, priv, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	der, _ := x509.MarshalPKCS8PrivateKey(priv)
	f.dns.AddTXT(f.dom.DKIMSelector+"._domainkey."+f.dom.Name, f.dom.DKIMRecordValue())
	f.dns.AddTXT("ed1._domainkey."+f.dom.Name, "v=DKIM1; k=ed25519; p="+base64.StdEncoding.EncodeToString(pub))
	rsaOnly, err := message.NewSigner(f.dom.Name, f.dom.DKIMSelector, f.dom.DKIMPrivateKey)
	if err != nil {
		t.Fatal(err)
	}
	both, err := rsaOnly.WithEd25519("ed1", der)
	if err != nil {
		t.Fatalf("WithEd25519: %v", err)
	}
	signed := signedMessage(t, both)
	if !strings.Contains(unfoldedSignature(signed), "a=rsa-sha256") {
		t.Errorf("the first signature is not the RSA one: %s", unfoldedSignature(signed))
	}
	vs := verifyAll(t, f, signed)
	if len(vs) != 2 {
		t.Fatalf("%d signatures, want 2", len(vs))
	}
	for i, want := range []string{"rsa", "ed25519"} {
		if vs[i].Err != nil || vs[i].Domain != f.dom.Name {
			t.Errorf("signature %d (%s): d=%s err=%v, want a pass", i, want, vs[i].Domain, vs[i].Err)
		}
	}
	// The RSA-only signer is unchanged by WithEd25519.
	if n := len(verifyAll(t, f, signedMessage(t, rsaOnly))); n != 1 {
		t.Errorf("the RSA signer signs %d times after WithEd25519, want 1", n)
	}
	tampered := bytes.Replace(signed, []byte("Subject: Your receipt"), []byte("Subject: Your refund"), 1)
	for i, v := range verifyAll(t, f, tampered) {
		if v.Err == nil {
			t.Errorf("signature %d of a changed subject verifies", i)
		}
	}
}

func TestWithEd25519Rejects(t *testing.T) {
	t.Parallel()
	f := setup(t)
	s, err := message.NewSigner(f.dom.Name, f.dom.DKIMSelector, f.dom.DKIMPrivateKey)
	if err != nil {
		t.Fatal(err)
	}
	_, edKey, _ := ed25519.GenerateKey(rand.Reader)
	edDER, _ := x509.MarshalPKCS8PrivateKey(edKey)
	for name, c := range map[string]struct {
		selector string
		key      []byte
	}{
		"RSA key":        {"ed1", f.dom.DKIMPrivateKey},
		"garbage key":    {"ed1", []byte("x")},
		"empty selector": {"", edDER},
		"bad selector":   {"ed 1", edDER},
	} {
		if _, err := s.WithEd25519(c.selector, c.key); err == nil {
			t.Errorf("%s: WithEd25519 succeeded, want an error", name)
		}
	}
}

// verifyAll verifies every signature of msg against the local DNS server.
func verifyAll(t *testing.T, f *dkimFixture, msg []byte) []*dkim.Verification {
	t.Helper()
	vs, err := dkim.VerifyWithOptions(bytes.NewReader(msg), &dkim.VerifyOptions{
		LookupTXT: func(name string) ([]string, error) { return f.res.LookupTXT(t.Context(), name) },
	})
	if err != nil {
		t.Fatalf("VerifyWithOptions: %v", err)
	}
	return vs
}
