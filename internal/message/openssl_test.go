//go:build openssl

package message

import (
	"bytes"
	"crypto"
	"crypto/rand"
	"crypto/rsa"
	"crypto/sha256"
	"crypto/x509"
	"encoding/base64"
	"fmt"
	"sync"
	"testing"

	"github.com/emersion/go-msgauth/dkim"
)

// testKey makes an RSA key of bits bits and its openssl-held twin.
func testKey(t testing.TB, bits int) (*rsa.PrivateKey, *openSSLKey) {
	t.Helper()
	k, err := rsa.GenerateKey(rand.Reader, bits)
	if err != nil {
		t.Fatal(err)
	}
	o, err := newOpenSSLKey(k)
	if err != nil {
		t.Fatal(err)
	}
	return k, o
}

// RSASSA-PKCS1-v1_5 is deterministic (RFC 8017 §8.2): libcrypto must make
// the very bytes Go makes, for every key size DKIM uses and any message.
func TestOpenSSLSignsAsGo(t *testing.T) {
	t.Parallel()
	for _, bits := range []int{1024, 1024, 2048, 2048, 2048, 3072} {
		k, o := testKey(t, bits)
		for i := range 64 {
			msg := make([]byte, i*37)
			rand.Read(msg)
			digest := sha256.Sum256(msg)
			want, err := k.Sign(nil, digest[:], crypto.SHA256)
			if err != nil {
				t.Fatal(err)
			}
			got, err := o.Sign(rand.Reader, digest[:], crypto.SHA256)
			if err != nil {
				t.Fatalf("%d bits, message %d: %v", bits, i, err)
			}
			if !bytes.Equal(got, want) {
				t.Fatalf("%d bits, message %d: openssl signature %x\ndiffers from Go's %x", bits, i, got, want)
			}
		}
	}
}

// One key signs from many goroutines at once, as the delivery workers do.
func TestOpenSSLConcurrent(t *testing.T) {
	t.Parallel()
	k, o := testKey(t, 2048)
	var wg sync.WaitGroup
	errs := make(chan error, 8)
	for g := range 8 {
		wg.Go(func() {
			for i := range 25 {
				digest := sha256.Sum256(fmt.Appendf(nil, "goroutine %d message %d", g, i))
				want, _ := k.Sign(nil, digest[:], crypto.SHA256)
				got, err := o.Sign(nil, digest[:], crypto.SHA256)
				if err != nil || !bytes.Equal(got, want) {
					errs <- fmt.Errorf("goroutine %d message %d: %v (equal %t)", g, i, err, bytes.Equal(got, want))
					return
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
}

func TestOpenSSLRejectsWrongDigest(t *testing.T) {
	t.Parallel()
	_, o := testKey(t, 1024)
	if _, err := o.Sign(nil, make([]byte, 20), crypto.SHA256); err == nil {
		t.Error("Sign of a 20-byte digest as SHA-256: no error")
	}
}

// A message signed by NewSigner in this build (libcrypto) verifies with
// go-msgauth against the published public key.
func TestOpenSSLDKIMVerifies(t *testing.T) {
	t.Parallel()
	k, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	der, _ := x509.MarshalPKCS8PrivateKey(k)
	pub, _ := x509.MarshalPKIXPublicKey(&k.PublicKey)
	s, err := NewSigner("example.com", "pl202611", der)
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := s.keys[0].key.(*openSSLKey); !ok || RSABackend != "openssl" {
		t.Fatalf("NewSigner's key is %T (backend %s), want *openSSLKey", s.keys[0].key, RSABackend)
	}
	msg := "From: a@example.com\r\nTo: b@example.net\r\nSubject: hi\r\n\r\nHello.\r\n"
	signed, err := s.Sign([]byte(msg))
	if err != nil {
		t.Fatal(err)
	}
	record := "v=DKIM1; k=rsa; p=" + base64.StdEncoding.EncodeToString(pub)
	vs, err := dkim.VerifyWithOptions(bytes.NewReader(signed), &dkim.VerifyOptions{
		LookupTXT: func(name string) ([]string, error) {
			if name != "pl202611._domainkey.example.com" {
				return nil, fmt.Errorf("no TXT at %s", name)
			}
			return []string{record}, nil
		},
	})
	if err != nil || len(vs) != 1 || vs[0].Err != nil {
		t.Fatalf("verify: %v, %d verifications %+v", err, len(vs), vs)
	}
}
