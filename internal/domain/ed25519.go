package domain

import (
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"crypto/x509"
	"encoding/base64"
	"fmt"
)

// Ed25519 DKIM (RFC 8463) is a second signature beside the RSA one, never
// instead of it: receivers that do not know ed25519-sha256 ignore it and
// still need the RSA signature (RFC 8463 §4 recommends signing with both).

// DKIMEd25519Selector is the selector of the domain's Ed25519 key: the RSA
// selector with "-ed" after it, so the two keys sit side by side and the
// one cannot be published where the other is looked up.
func (d Domain) DKIMEd25519Selector() string { return d.DKIMSelector + "-ed" }

// DKIMEd25519PublicKey is the base64 of the raw 32-byte Ed25519 public key
// as RFC 8463 §4.2 publishes it ("" when the domain has no Ed25519 key).
func (d Domain) DKIMEd25519PublicKey() string {
	k, err := x509.ParsePKCS8PrivateKey(d.DKIMEd25519Key)
	if err != nil {
		return ""
	}
	ek, ok := k.(ed25519.PrivateKey)
	if !ok {
		return ""
	}
	return base64.StdEncoding.EncodeToString(ek.Public().(ed25519.PublicKey))
}

// DKIMEd25519RecordValue is the TXT value publishing the Ed25519 key.
func (d Domain) DKIMEd25519RecordValue() string {
	return "v=DKIM1; k=ed25519; p=" + d.DKIMEd25519PublicKey()
}

// newEd25519Key makes an Ed25519 key in PKCS#8 DER form.
func newEd25519Key() ([]byte, error) {
	_, priv, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		return nil, err
	}
	return x509.MarshalPKCS8PrivateKey(priv)
}

// SetDKIMEd25519 turns the second, Ed25519 DKIM signature on or off. The
// key is made the first time it is turned on and kept when it is turned
// off, so turning it on again needs no new DNS record. Turning it on is
// refused for an ended claim.
func (s *Service) SetDKIMEd25519(ctx context.Context, d Domain, on bool) (Domain, error) {
	d, err := s.Current(ctx, d)
	if err != nil {
		return d, err
	}
	if on {
		if err := d.CheckClaim(); err != nil {
			return d, err
		}
		if err := ensureEd25519Key(&d); err != nil {
			return d, err
		}
	}
	d.DKIMEd25519 = on
	return d, s.store.UpdateDomain(ctx, d)
}

// ensureEd25519Key gives d an Ed25519 key when it has none.
func ensureEd25519Key(d *Domain) error {
	if len(d.DKIMEd25519Key) > 0 {
		return nil
	}
	k, err := newEd25519Key()
	if err != nil {
		return fmt.Errorf("domain: making the Ed25519 DKIM key: %w", err)
	}
	d.DKIMEd25519Key = k
	return nil
}

// dkimRecords are the DKIM records of d's keys at host (the domain, or
// its authentication domain): RSA always, Ed25519 when it is on.
func dkimRecords(d Domain, purpose, host string) []Record {
	recs := []Record{{Purpose: purpose, Type: "TXT", Name: d.DKIMSelector + "._domainkey." + host, Value: d.DKIMRecordValue(), Required: true}}
	if d.DKIMEd25519 {
		recs = append(recs, Record{Purpose: purpose + "_ed25519", Type: "TXT", Name: d.DKIMEd25519Selector() + "._domainkey." + host,
			Value: d.DKIMEd25519RecordValue(), Required: true})
	}
	return recs
}
