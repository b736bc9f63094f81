package message_test

import (
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"testing"

	"github.com/postline/postline/internal/message"
)

// BenchmarkBuildAndSign is one recipient's message as a delivery worker
// makes it: text and HTML, one small attachment, signed with a 2048-bit key.
func BenchmarkBuildAndSign(b *testing.B) {
	key, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		b.Fatal(err)
	}
	der, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		b.Fatal(err)
	}
	s, err := message.NewSigner("example.com", "pl202603", der)
	if err != nil {
		b.Fatal(err)
	}
	p := base()
	p.FromName = "Acme"
	p.HTML = html
	p.ListUnsubscribe = "<https://t.example.com/u/abc123>"
	p.Attachments = []message.Attachment{{Filename: "invoice.pdf", ContentType: "application/pdf", Data: pdf}}
	b.ReportAllocs()
	for b.Loop() {
		msg, err := message.Build(p)
		if err != nil {
			b.Fatal(err)
		}
		if _, err := s.Sign(msg); err != nil {
			b.Fatal(err)
		}
	}
}
