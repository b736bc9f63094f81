// Package rsa compares, on this machine, the RSA-2048 signature DKIM costs
// per message with Go's standard library against the pure-Go constant-time
// alternative a maintained library offers (filippo.io/bigmod, the
// standalone form of the arithmetic crypto/rsa is built on), with Ed25519
// (RFC 8463 DKIM signatures) for scale. A module of its own, so the
// benchmark's dependency stays out of Postline's build.
//
//	cd bench/rsa && go test -bench . -benchtime 2s
package rsa

import (
	"crypto"
	"crypto/ed25519"
	"crypto/rand"
	"crypto/rsa"
	"crypto/sha256"
	"testing"

	"filippo.io/bigmod"
)

var digest = sha256.Sum256([]byte("DKIM-Signature header and body hash of one message"))

func key(b *testing.B) *rsa.PrivateKey {
	k, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		b.Fatal(err)
	}
	return k
}

func BenchmarkSignStdlib(b *testing.B) {
	k := key(b)
	for b.Loop() {
		if _, err := rsa.SignPKCS1v15(nil, k, crypto.SHA256, digest[:]); err != nil {
			b.Fatal(err)
		}
	}
}

// crtKey is the CRT form of a private key in bigmod's types.
type crtKey struct {
	n, p, q    *bigmod.Modulus
	dP, dQ     []byte
	qInv       *bigmod.Nat
	size       int
	sha256Info []byte
}

func newCRT(b *testing.B, k *rsa.PrivateKey) *crtKey {
	n, err := bigmod.NewModulus(k.N.Bytes())
	if err != nil {
		b.Fatal(err)
	}
	p, _ := bigmod.NewModulus(k.Primes[0].Bytes())
	q, _ := bigmod.NewModulus(k.Primes[1].Bytes())
	qInv, err := bigmod.NewNat().SetBytes(k.Precomputed.Qinv.Bytes(), p)
	if err != nil {
		b.Fatal(err)
	}
	prefix := []byte{0x30, 0x31, 0x30, 0x0d, 0x06, 0x09, 0x60, 0x86, 0x48, 0x01, 0x65, 0x03, 0x04, 0x02, 0x01, 0x05, 0x00, 0x04, 0x20}
	return &crtKey{n: n, p: p, q: q, dP: k.Precomputed.Dp.Bytes(), dQ: k.Precomputed.Dq.Bytes(), qInv: qInv,
		size: k.Size(), sha256Info: prefix}
}

// sign is PKCS #1 v1.5 with the CRT, constant time in the key (bigmod's
// Exp and Mul are): the same steps crypto/rsa takes, without its checks.
func (k *crtKey) sign(h []byte) []byte {
	em := make([]byte, k.size)
	em[1] = 1
	t := append(k.sha256Info[:len(k.sha256Info):len(k.sha256Info)], h...)
	for i := 2; i < k.size-len(t)-1; i++ {
		em[i] = 0xff
	}
	copy(em[k.size-len(t):], t)
	c, _ := bigmod.NewNat().SetBytes(em, k.n)
	m1 := bigmod.NewNat().Exp(bigmod.NewNat().Mod(c, k.p), k.dP, k.p)
	m2 := bigmod.NewNat().Exp(bigmod.NewNat().Mod(c, k.q), k.dQ, k.q)
	h1 := bigmod.NewNat().Mod(m2, k.p)
	m1.Sub(h1, k.p).Mul(k.qInv, k.p)
	m := bigmod.NewNat().ExpandFor(k.n).Mod(m1, k.n).Mul(bigmod.NewNat().Mod(k.q.Nat(), k.n), k.n)
	m.Add(bigmod.NewNat().ExpandFor(k.n).Mod(m2, k.n), k.n)
	return m.Bytes(k.n)
}

func BenchmarkSignBigmod(b *testing.B) {
	k := key(b)
	ck := newCRT(b, k)
	if err := rsa.VerifyPKCS1v15(&k.PublicKey, crypto.SHA256, digest[:], ck.sign(digest[:])); err != nil {
		b.Fatalf("bigmod signature does not verify: %v", err)
	}
	for b.Loop() {
		ck.sign(digest[:])
	}
}

func BenchmarkSignEd25519(b *testing.B) {
	_, priv, _ := ed25519.GenerateKey(rand.Reader)
	for b.Loop() {
		ed25519.Sign(priv, digest[:])
	}
}
