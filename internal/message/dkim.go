package message

import (
	"bufio"
	"bytes"
	"crypto"
	"crypto/ed25519"
	"crypto/rsa"
	"crypto/x509"
	"errors"
	"fmt"
	"slices"

	"github.com/emersion/go-message/textproto"
	"github.com/emersion/go-msgauth/dkim"
)

// signedHeaders are the fields a signature covers when the message has them,
// in h= order.
var signedHeaders = []string{
	"From", "To", "Cc", "Subject", "Date", "Message-ID", "Reply-To", "MIME-Version",
	"Content-Type", "List-Unsubscribe", "List-Unsubscribe-Post",
}

// minKeyBits is the smallest RSA key RFC 8301 §3.2 lets a signer use.
const minKeyBits = 1024

// Signer DKIM-signs messages (RFC 6376) for one signing domain with an RSA
// key (rsa-sha256) and, when WithEd25519 added one, an Ed25519 key too
// (ed25519-sha256, RFC 8463): one DKIM-Signature field per key,
// relaxed/relaxed. It is safe for concurrent use.
type Signer struct {
	domain string
	keys   []signingKey // the RSA key first
}

// signingKey is one key and the selector its public key is published at.
type signingKey struct {
	selector string
	key      crypto.Signer
}

// NewSigner returns a Signer for d=domain and s=selector with the RSA private
// key in PKCS#8 DER form (domain.Domain.DKIMPrivateKey). domain is the
// sending domain, or its authentication domain when the key is published
// there; the public key must be at selector._domainkey.domain.
func NewSigner(domain, selector string, pkcs8 []byte) (*Signer, error) {
	if !isDNSName(domain) {
		return nil, fmt.Errorf("message: DKIM domain %q is not a DNS name", domain)
	}
	if !isDNSName(selector) {
		return nil, fmt.Errorf("message: DKIM selector %q is not a DNS name", selector)
	}
	k, err := x509.ParsePKCS8PrivateKey(pkcs8)
	if err != nil {
		return nil, fmt.Errorf("message: DKIM key: %w", err)
	}
	rk, ok := k.(*rsa.PrivateKey)
	if !ok {
		return nil, fmt.Errorf("message: DKIM key is %T, want RSA", k)
	}
	if bits := rk.N.BitLen(); bits < minKeyBits {
		return nil, fmt.Errorf("message: DKIM key has %d bits, want at least %d", bits, minKeyBits)
	}
	key, err := rsaSigner(rk)
	if err != nil {
		return nil, err
	}
	return &Signer{domain: domain, keys: []signingKey{{selector, key}}}, nil
}

// WithEd25519 returns a Signer that signs as s does and adds an Ed25519
// signature with the key in PKCS#8 DER form
// (domain.Domain.DKIMEd25519Key), published at selector._domainkey of
// the signing domain.
func (s *Signer) WithEd25519(selector string, pkcs8 []byte) (*Signer, error) {
	if !isDNSName(selector) {
		return nil, fmt.Errorf("message: DKIM selector %q is not a DNS name", selector)
	}
	k, err := x509.ParsePKCS8PrivateKey(pkcs8)
	if err != nil {
		return nil, fmt.Errorf("message: Ed25519 DKIM key: %w", err)
	}
	ek, ok := k.(ed25519.PrivateKey)
	if !ok {
		return nil, fmt.Errorf("message: Ed25519 DKIM key is %T", k)
	}
	return &Signer{domain: s.domain, keys: append(slices.Clip(s.keys), signingKey{selector, ek})}, nil
}

// Domain returns the signing domain, the signature's d= tag.
func (s *Signer) Domain() string { return s.domain }

// Sign returns msg with a DKIM-Signature field per key prepended (the RSA
// one first). Each signs those of signedHeaders that msg has, each listed
// once more than it occurs (RFC 6376 §8.15 "oversigning"), so a relay or
// attacker adding a second From, Subject or List-Unsubscribe breaks the
// signature instead of changing what the recipient sees under it.
func (s *Signer) Sign(msg []byte) ([]byte, error) {
	h, err := textproto.ReadHeader(bufio.NewReader(bytes.NewReader(msg)))
	if err != nil {
		return nil, fmt.Errorf("message: reading header to sign: %w", err)
	}
	if !h.Has("From") {
		return nil, errors.New("message: cannot sign a message without From")
	}
	var keys []string
	for _, k := range signedHeaders {
		if n := len(h.Values(k)); n > 0 {
			for range n + 1 {
				keys = append(keys, k)
			}
		}
	}
	fields := make([]string, len(s.keys))
	for i, k := range s.keys {
		f, err := signature(msg, &dkim.SignOptions{
			Domain:                 s.domain,
			Selector:               k.selector,
			Signer:                 k.key,
			Hash:                   crypto.SHA256,
			HeaderCanonicalization: dkim.CanonicalizationRelaxed,
			BodyCanonicalization:   dkim.CanonicalizationRelaxed,
			HeaderKeys:             keys,
		})
		if err != nil {
			return nil, fmt.Errorf("message: DKIM signing: %w", err)
		}
		fields[i] = f
	}
	// The RSA signature on top: a verifier that looks at the first
	// signature only finds the one every receiver understands.
	var out bytes.Buffer
	out.Grow(len(msg) + 1024*len(fields))
	for _, f := range fields {
		out.WriteString(f)
	}
	out.Write(msg)
	return out.Bytes(), nil
}

// signature returns the DKIM-Signature field (with its CRLF) of msg
// signed as o says.
func signature(msg []byte, o *dkim.SignOptions) (string, error) {
	ds, err := dkim.NewSigner(o)
	if err != nil {
		return "", err
	}
	if _, err := ds.Write(msg); err != nil {
		ds.Close()
		return "", err
	}
	if err := ds.Close(); err != nil {
		return "", err
	}
	return ds.Signature(), nil
}

// isDNSName accepts ASCII labels of letters, digits, '-' and '_' (selectors
// and _domainkey names use it) separated by dots, as DKIM tags must be
// A-labels.
func isDNSName(s string) bool {
	if s == "" || len(s) > 253 {
		return false
	}
	label := 0
	for i := 0; i < len(s); i++ {
		switch c := s[i]; {
		case c == '.':
			if label == 0 {
				return false
			}
			label = 0
		case c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z', c >= '0' && c <= '9', c == '-', c == '_':
			if label++; label > 63 {
				return false
			}
		default:
			return false
		}
	}
	return label > 0
}
