package domain

import (
	"context"
	"crypto/ed25519"
	"crypto/x509"
	"encoding/base64"
	"testing"

	"github.com/postline/postline/internal/dnsclient"
)

// zone is a Resolver answering TXT look-ups from a map.
type zone map[string][]string

func (z zone) LookupTXT(_ context.Context, name string) ([]string, error) { return z[name], nil }
func (zone) LookupCNAME(context.Context, string) (string, error)          { return "", nil }
func (zone) LookupMX(context.Context, string) ([]dnsclient.MX, error)     { return nil, nil }

// The Ed25519 record (RFC 8463 §4.2): beside the RSA one, at the RSA
// selector plus "-ed", k=ed25519 and the raw 32-byte key in p=; at the
// authentication domain too; only while the option is on.
func TestEd25519Records(t *testing.T) {
	t.Parallel()
	d := Domain{Name: "shop.example", DKIMSelector: "pl202611", DKIMPublicKey: "AAAA", AuthDomain: "mail.shop.example"}
	if err := ensureEd25519Key(&d); err != nil {
		t.Fatal(err)
	}
	s := NewService(nil, nil, Config{})
	if recs := byPurpose(s.Records(d)); len(recs["dkim_ed25519"].Name)+len(recs["auth_dkim_ed25519"].Name) != 0 {
		t.Fatalf("records with the option off list Ed25519: %+v", recs)
	}
	d.DKIMEd25519 = true
	recs := byPurpose(s.Records(d))
	k, _ := x509.ParsePKCS8PrivateKey(d.DKIMEd25519Key)
	pub := base64.StdEncoding.EncodeToString(k.(ed25519.PrivateKey).Public().(ed25519.PublicKey))
	if raw, _ := base64.StdEncoding.DecodeString(pub); len(raw) != 32 {
		t.Fatalf("public key is %d bytes, want 32", len(raw))
	}
	for purpose, name := range map[string]string{"dkim_ed25519": "pl202611-ed._domainkey.shop.example",
		"auth_dkim_ed25519": "pl202611-ed._domainkey.mail.shop.example"} {
		r := recs[purpose]
		if r.Type != "TXT" || r.Name != name || r.Value != "v=DKIM1; k=ed25519; p="+pub || !r.Required || r.ValueSplit != "" {
			t.Errorf("%s: %+v; want TXT %s with k=ed25519 and the key, required", purpose, r, name)
		}
	}
	if r := recs["dkim"]; r.Name != "pl202611._domainkey.shop.example" || r.Value != "v=DKIM1; k=rsa; p=AAAA" {
		t.Errorf("the RSA record changed: %+v", r)
	}
}

// Verification looks the Ed25519 record up like the RSA one: required
// while on (missing, another key: not verified), ignored while off.
func TestVerifyNeedsEd25519WhenOn(t *testing.T) {
	t.Parallel()
	d := Domain{ID: 1, AccountID: 1, Name: "shop.example", DKIMSelector: "pl1", DKIMPublicKey: "AAAA", DKIMEd25519: true}
	if err := ensureEd25519Key(&d); err != nil {
		t.Fatal(err)
	}
	other := Domain{}
	ensureEd25519Key(&other)
	base := zone{"shop.example": {"v=spf1 a mx ~all"}, "pl1._domainkey.shop.example": {"v=DKIM1; k=rsa; p=AAAA"}}
	with := func(txt string) zone {
		z := zone{"pl1-ed._domainkey.shop.example": {txt}}
		for k, v := range base {
			z[k] = v
		}
		return z
	}
	tests := []struct {
		name     string
		on       bool
		z        zone
		status   string
		verified bool
	}{
		{"on, missing", true, base, StatusMissing, false},
		{"on, another key", true, with(other.DKIMEd25519RecordValue()), StatusMismatch, false},
		{"on, published", true, with(d.DKIMEd25519RecordValue()), StatusOK, true},
		{"on, published with other spacing", true, with("v=DKIM1;k=ed25519;  p=" + d.DKIMEd25519PublicKey()), StatusOK, true},
		{"off, missing", false, base, "", true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			dd := d
			dd.DKIMEd25519 = tc.on
			st := &oneDomain{d: dd}
			got, _, err := NewService(st, tc.z, Config{}).Verify(context.Background(), dd, false)
			if err != nil || got.Verified() != tc.verified || st.checked.Statuses["dkim_ed25519"] != tc.status {
				t.Errorf("Verify: verified %v, dkim_ed25519 %q, %v; want verified %v, %q", got.Verified(),
					st.checked.Statuses["dkim_ed25519"], err, tc.verified, tc.status)
			}
		})
	}
}

// Turning the option off keeps the key: on again, the same record.
func TestSetDKIMEd25519KeepsKey(t *testing.T) {
	t.Parallel()
	st := &updating{oneDomain: oneDomain{d: Domain{ID: 1, AccountID: 1, Name: "shop.example", DKIMSelector: "pl1"}}}
	s := NewService(st, nil, Config{})
	on, err := s.SetDKIMEd25519(context.Background(), st.d, true)
	if err != nil || !on.DKIMEd25519 || on.DKIMEd25519PublicKey() == "" || !st.d.DKIMEd25519 {
		t.Fatalf("on: %+v, %v", on, err)
	}
	off, err := s.SetDKIMEd25519(context.Background(), st.d, false)
	if err != nil || off.DKIMEd25519 || st.d.DKIMEd25519 {
		t.Fatalf("off: %v, stored %v, %v", off.DKIMEd25519, st.d.DKIMEd25519, err)
	}
	again, _ := s.SetDKIMEd25519(context.Background(), st.d, true)
	if again.DKIMEd25519RecordValue() != on.DKIMEd25519RecordValue() {
		t.Error("turning Ed25519 on again made a new key: the published record would no longer match")
	}
}

// updating is a oneDomain that keeps what UpdateDomain writes.
type updating struct{ oneDomain }

func (s *updating) UpdateDomain(_ context.Context, d Domain) error {
	s.d = d
	return nil
}
