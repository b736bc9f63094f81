package sending

import (
	"bytes"
	"crypto/ed25519"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"testing"

	"github.com/postline/postline/internal/domain"
)

// The signer cache follows the domain's Ed25519 switch and key: turned on,
// the next message carries two signatures; off, one again.
func TestSignerCacheFollowsEd25519(t *testing.T) {
	t.Parallel()
	k, err := rsa.GenerateKey(rand.Reader, 1024)
	if err != nil {
		t.Fatal(err)
	}
	der, _ := x509.MarshalPKCS8PrivateKey(k)
	_, ed, _ := ed25519.GenerateKey(rand.Reader)
	edDER, _ := x509.MarshalPKCS8PrivateKey(ed)
	dom := domain.Domain{ID: 1, Name: "shop.example", DKIMSelector: "pl1", DKIMPrivateKey: der, DKIMEd25519Key: edDER}
	msg := []byte("From: a@shop.example\r\nTo: b@example.net\r\nSubject: hi\r\n\r\nHello.\r\n")
	var c signerCache
	for i, on := range []bool{false, true, false, true} {
		dom.DKIMEd25519 = on
		s, err := c.get(dom)
		if err != nil {
			t.Fatal(err)
		}
		signed, err := s.Sign(msg)
		if err != nil {
			t.Fatal(err)
		}
		want := 1
		if on {
			want = 2
		}
		if got := bytes.Count(signed, []byte("DKIM-Signature:")); got != want {
			t.Errorf("step %d, Ed25519 %v: %d signatures, want %d", i, on, got, want)
		}
	}
}
