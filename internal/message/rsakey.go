//go:build !openssl

package message

import (
	"crypto"
	"crypto/rsa"
)

// RSABackend names the code that makes RSA signatures in this build: the
// Go standard library here; "openssl" in a build with -tags openssl.
const RSABackend = "go"

// rsaSigner is the crypto.Signer a DKIM signature is made with: the Go
// key itself in the default (pure Go, static) build.
func rsaSigner(k *rsa.PrivateKey) (crypto.Signer, error) { return k, nil }
