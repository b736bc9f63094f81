//go:build openssl && unix

package message

import (
	"crypto"
	"crypto/sha256"
	"testing"
)

// BenchmarkRSASign compares one RSA-2048 PKCS#1 v1.5 SHA-256 signature by
// Go's crypto/rsa and by libcrypto, on one goroutine and on all cores:
//
//	CGO_ENABLED=1 go test -tags openssl -run '^$' -bench 'RSASign|DKIMSign' ./internal/message/
//
// Besides ns/op (wall time, which other load on the machine stretches)
// each reports cpu-ns/op: the process's CPU time per signature.
func BenchmarkRSASign(b *testing.B) {
	k, o := testKey(b, 2048)
	digest := sha256.Sum256([]byte("a message"))
	for _, c := range []struct {
		name string
		s    crypto.Signer
	}{{"go", k}, {"openssl", o}} {
		b.Run(c.name, func(b *testing.B) {
			defer cpuPerOp(b)()
			for b.Loop() {
				if _, err := c.s.Sign(nil, digest[:], crypto.SHA256); err != nil {
					b.Fatal(err)
				}
			}
		})
		b.Run(c.name+"-parallel", func(b *testing.B) {
			defer cpuPerOp(b)()
			b.RunParallel(func(pb *testing.PB) {
				for pb.Next() {
					if _, err := c.s.Sign(nil, digest[:], crypto.SHA256); err != nil {
						b.Error(err)
						return
					}
				}
			})
		})
	}
}

// BenchmarkDKIMSign is a whole DKIM signature of a small message (header
// parse, canonicalisation, hashes, RSA-2048) by each backend.
func BenchmarkDKIMSign(b *testing.B) {
	k, o := testKey(b, 2048)
	msg := []byte("From: Acme <news@example.com>\r\nTo: b@example.net\r\nSubject: News\r\n" +
		"Date: Fri, 27 Nov 2026 09:00:00 +0000\r\nMessage-ID: <1@example.com>\r\nMIME-Version: 1.0\r\n" +
		"Content-Type: text/plain; charset=utf-8\r\n\r\nHello, this is the news.\r\n")
	for _, c := range []struct {
		name string
		key  crypto.Signer
	}{{"go", k}, {"openssl", o}} {
		s := &Signer{domain: "example.com", keys: []signingKey{{"pl202611", c.key}}}
		b.Run(c.name, func(b *testing.B) {
			defer cpuPerOp(b)()
			for b.Loop() {
				if _, err := s.Sign(msg); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
