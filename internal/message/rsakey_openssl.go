//go:build openssl

package message

import (
	"crypto"
	"crypto/rsa"
)

// RSABackend names the code that makes RSA signatures in this build: the
// system's OpenSSL libcrypto (built with -tags openssl).
const RSABackend = "openssl"

// rsaSigner is the crypto.Signer a DKIM signature is made with: libcrypto
// holding the key in a build with -tags openssl.
func rsaSigner(k *rsa.PrivateKey) (crypto.Signer, error) { return newOpenSSLKey(k) }
