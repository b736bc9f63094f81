//go:build openssl

package message

/*
#cgo LDFLAGS: -lcrypto
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/rsa.h>
#include <openssl/x509.h>

// pl_load parses a PKCS#8 DER private key; NULL on failure.
static EVP_PKEY *pl_load(const unsigned char *der, long n) {
	const unsigned char *p = der;
	return d2i_AutoPrivateKey(NULL, &p, n);
}

// pl_sign makes an RSASSA-PKCS1-v1_5 signature of a SHA-256 digest into
// sig (EVP_PKEY_get_size(k) bytes). It returns 0 on success, else
// libcrypto's error code (or 1 when there is none). The error queue is
// per thread, so it is read and cleared within this call.
static unsigned long pl_sign(EVP_PKEY *k, const unsigned char *dg, size_t dglen,
		unsigned char *sig, size_t *siglen) {
	ERR_clear_error();
	EVP_PKEY_CTX *c = EVP_PKEY_CTX_new(k, NULL);
	int ok = c != NULL &&
		EVP_PKEY_sign_init(c) > 0 &&
		EVP_PKEY_CTX_set_rsa_padding(c, RSA_PKCS1_PADDING) > 0 &&
		EVP_PKEY_CTX_set_signature_md(c, EVP_sha256()) > 0 &&
		EVP_PKEY_sign(c, sig, siglen, dg, dglen) > 0;
	EVP_PKEY_CTX_free(c);
	if (ok) return 0;
	unsigned long e = ERR_get_error();
	ERR_clear_error();
	return e ? e : 1;
}

static int pl_size(EVP_PKEY *k) { return EVP_PKEY_get_size(k); }
*/
import "C"

import (
	"crypto"
	"crypto/rsa"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"runtime"
	"unsafe"
)

// openSSLKey is an RSA private key held by libcrypto: one EVP_PKEY parsed
// once and shared by every signature (libcrypto's RSA keys are safe for
// concurrent use; each signature has its own EVP_PKEY_CTX). The EVP_PKEY
// is freed when the openSSLKey is no longer reachable.
type openSSLKey struct {
	pub      *rsa.PublicKey
	fallback *rsa.PrivateKey // signs what libcrypto is not asked to (not SHA-256, PSS)
	pkey     *C.EVP_PKEY
	size     int
}

// newOpenSSLKey hands k to libcrypto.
func newOpenSSLKey(k *rsa.PrivateKey) (*openSSLKey, error) {
	der, err := x509.MarshalPKCS8PrivateKey(k)
	if err != nil {
		return nil, err
	}
	pkey := C.pl_load((*C.uchar)(unsafe.Pointer(&der[0])), C.long(len(der)))
	clear(der)
	if pkey == nil {
		return nil, errors.New("message: libcrypto did not take the RSA key")
	}
	o := &openSSLKey{pub: &k.PublicKey, fallback: k, pkey: pkey, size: int(C.pl_size(pkey))}
	runtime.AddCleanup(o, func(p *C.EVP_PKEY) { C.EVP_PKEY_free(p) }, pkey)
	return o, nil
}

// Public implements crypto.Signer.
func (o *openSSLKey) Public() crypto.PublicKey { return o.pub }

// Sign implements crypto.Signer: RSASSA-PKCS1-v1_5 over a SHA-256 digest
// by libcrypto (rand is not used: these signatures are deterministic and
// libcrypto blinds with its own generator); other hashes and PSS go to
// the Go key.
func (o *openSSLKey) Sign(rand io.Reader, digest []byte, opts crypto.SignerOpts) ([]byte, error) {
	if _, pss := opts.(*rsa.PSSOptions); pss || opts.HashFunc() != crypto.SHA256 {
		return o.fallback.Sign(rand, digest, opts)
	}
	if len(digest) != crypto.SHA256.Size() {
		return nil, fmt.Errorf("message: digest has %d bytes, want %d", len(digest), crypto.SHA256.Size())
	}
	sig := make([]byte, o.size)
	n := C.size_t(len(sig))
	code := C.pl_sign(o.pkey, (*C.uchar)(unsafe.Pointer(&digest[0])), C.size_t(len(digest)),
		(*C.uchar)(unsafe.Pointer(&sig[0])), &n)
	runtime.KeepAlive(o)
	if code != 0 {
		var buf [256]C.char
		C.ERR_error_string_n(code, &buf[0], C.size_t(len(buf)))
		return nil, fmt.Errorf("message: libcrypto RSA signature: %s", C.GoString(&buf[0]))
	}
	return sig[:n], nil
}
