// Package dane checks an SMTP server's certificate against the TLSA
// records of its MX host name (DANE for SMTP, RFC 7672, with the usages of
// RFC 7671).
//
// Only DANE-TA(2) and DANE-EE(3) records are usable for SMTP (RFC 7672
// §3.1), with selector 0 (the whole certificate) or 1 (its
// SubjectPublicKeyInfo) and matching type 0 (exact), 1 (SHA-256) or 2
// (SHA-512); the others are ignored. A certificate passes when any usable
// record matches:
//
//   - DANE-EE: the server's own certificate matches; its names and dates
//     are not checked (RFC 7672 §3.1.1): the DNSSEC-signed record is the
//     whole authentication.
//   - DANE-TA: a certificate the server sent in its chain (the trust
//     anchor must be sent, RFC 7671 §8.1) matches, and the server's
//     certificate chains to it, is valid now and names the MX host (or the
//     recipient domain; RFC 7672 §3.2.2).
//
// Whether records apply at all (authenticated by DNSSEC, found at
// _PORT._tcp.MXHOST) is the caller's decision; this package only matches.
package dane

import (
	"bytes"
	"crypto/sha256"
	"crypto/sha512"
	"crypto/x509"
	"errors"
	"fmt"
	"time"

	"github.com/postline/postline/internal/dnsclient"
)

// The usages this package accepts (RFC 7218 names).
const (
	UsageDANETA = 2
	UsageDANEEE = 3
)

// Usable returns the records of recs that DANE for SMTP can use, in order.
func Usable(recs []dnsclient.TLSA) []dnsclient.TLSA {
	var out []dnsclient.TLSA
	for _, r := range recs {
		if (r.Usage == UsageDANETA || r.Usage == UsageDANEEE) && r.Selector <= 1 && r.MatchingType <= 2 {
			out = append(out, r)
		}
	}
	return out
}

// ErrNoMatch is the cause of Verify's error when no record matched.
var ErrNoMatch = errors.New("dane: no TLSA record matches the server's certificate")

// Verify checks chain (the server's certificates, its own first, as sent)
// against recs; names are the reference identifiers for DANE-TA (the MX
// host name first). It returns nil if a usable record matches, else an
// error wrapping ErrNoMatch.
func Verify(recs []dnsclient.TLSA, chain []*x509.Certificate, names []string, now time.Time) error {
	if len(chain) == 0 {
		return fmt.Errorf("%w: the server sent no certificate", ErrNoMatch)
	}
	usable := Usable(recs)
	if len(usable) == 0 {
		return fmt.Errorf("%w: no usable record (DANE-TA or DANE-EE)", ErrNoMatch)
	}
	var taErr error
	for _, r := range usable {
		switch r.Usage {
		case UsageDANEEE:
			if Matches(r, chain[0]) {
				return nil
			}
		case UsageDANETA:
			for _, ta := range chain[1:] {
				if !Matches(r, ta) {
					continue
				}
				if taErr = chainsTo(chain, ta, names, now); taErr == nil {
					return nil
				}
			}
		}
	}
	if taErr != nil {
		return fmt.Errorf("%w: the chain to the DANE-TA certificate does not verify: %v", ErrNoMatch, taErr)
	}
	return ErrNoMatch
}

// Matches reports whether r's data matches the selected part of c.
func Matches(r dnsclient.TLSA, c *x509.Certificate) bool {
	var data []byte
	switch r.Selector {
	case 0:
		data = c.Raw
	case 1:
		data = c.RawSubjectPublicKeyInfo
	default:
		return false
	}
	switch r.MatchingType {
	case 0:
		return bytes.Equal(r.Data, data)
	case 1:
		sum := sha256.Sum256(data)
		return bytes.Equal(r.Data, sum[:])
	case 2:
		sum := sha512.Sum512(data)
		return bytes.Equal(r.Data, sum[:])
	}
	return false
}

// chainsTo verifies the leaf of chain up to ta, taken as the only trust
// anchor, for one of names.
func chainsTo(chain []*x509.Certificate, ta *x509.Certificate, names []string, now time.Time) error {
	roots, inter := x509.NewCertPool(), x509.NewCertPool()
	roots.AddCert(ta)
	for _, c := range chain[1:] {
		inter.AddCert(c)
	}
	var err error
	for _, name := range names {
		_, err = chain[0].Verify(x509.VerifyOptions{DNSName: name, Roots: roots, Intermediates: inter,
			CurrentTime: now, KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageAny}})
		if err == nil {
			return nil
		}
	}
	return err
}
