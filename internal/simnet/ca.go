package simnet

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"math/big"
	"time"
)

// authority is the test CA standing for the public CAs: providers' MX and
// MTA-STS hosts get certificates it signed, and the server under test
// trusts it through SSL_CERT_FILE.
type authority struct {
	cert *x509.Certificate
	key  *ecdsa.PrivateKey
	pem  []byte
	// stranger is a certificate for a key nobody serves, for TLSA records
	// that match nothing.
	stranger *x509.Certificate
}

func newAuthority() (*authority, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, fmt.Errorf("simnet: CA key: %w", err)
	}
	now := time.Now()
	tmpl := &x509.Certificate{
		SerialNumber:          serial(),
		Subject:               pkix.Name{CommonName: "simnet test CA"},
		NotBefore:             now.Add(-time.Hour),
		NotAfter:              now.Add(7 * 24 * time.Hour),
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature,
		BasicConstraintsValid: true,
		IsCA:                  true,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		return nil, fmt.Errorf("simnet: CA certificate: %w", err)
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		return nil, err
	}
	a := &authority{cert: cert, key: key, pem: pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})}
	s, err := a.issue([]string{"stranger.simnet.test"}, now.Add(-time.Hour), now.Add(24*time.Hour), false)
	if err != nil {
		return nil, err
	}
	a.stranger = s.Leaf
	return a, nil
}

// issue makes a server certificate for names valid from notBefore to
// notAfter, signed by the CA (its certificate follows the leaf in the
// chain, as a server with a DANE-TA record must send it, RFC 7671 §8.1),
// or self-signed.
func (a *authority) issue(names []string, notBefore, notAfter time.Time, selfSigned bool) (tls.Certificate, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return tls.Certificate{}, fmt.Errorf("simnet: key: %w", err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: serial(),
		Subject:      pkix.Name{CommonName: names[0]},
		DNSNames:     names,
		NotBefore:    notBefore,
		NotAfter:     notAfter,
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}
	parent, signer := a.cert, any(a.key)
	if selfSigned {
		parent, signer = tmpl, key
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, parent, &key.PublicKey, signer)
	if err != nil {
		return tls.Certificate{}, fmt.Errorf("simnet: certificate for %s: %w", names[0], err)
	}
	leaf, err := x509.ParseCertificate(der)
	if err != nil {
		return tls.Certificate{}, err
	}
	chain := [][]byte{der}
	if !selfSigned {
		chain = append(chain, a.cert.Raw)
	}
	return tls.Certificate{Certificate: chain, PrivateKey: key, Leaf: leaf}, nil
}

func serial() *big.Int {
	n, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 127))
	if err != nil {
		panic(err) // crypto/rand does not fail on supported platforms
	}
	return n
}

// serverTLS is the STARTTLS configuration for mode, with the provider's MX
// host names; nil for TLSOff.
func (a *authority) serverTLS(mode TLSMode, names []string) (*tls.Config, error) {
	now := time.Now()
	from, until := now.Add(-time.Hour), now.Add(7*24*time.Hour)
	var cert tls.Certificate
	var err error
	switch mode {
	case TLSOff:
		return nil, nil
	case TLSValid:
		cert, err = a.issue(names, from, until, false)
	case TLSWrongName:
		cert, err = a.issue([]string{"wrong-name.simnet.test"}, from, until, false)
	case TLSUntrusted:
		cert, err = a.issue(names, from, until, true)
	case TLSExpired:
		cert, err = a.issue(names, now.Add(-48*time.Hour), now.Add(-time.Hour), false)
	default:
		return nil, fmt.Errorf("simnet: TLS mode %d", mode)
	}
	if err != nil {
		return nil, err
	}
	return &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12}, nil
}
