package domain

import (
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"encoding/base64"
	"strings"
	"testing"
)

func byPurpose(recs []Record) map[string]Record {
	out := map[string]Record{}
	for _, r := range recs {
		out[r.Purpose] = r
	}
	return out
}

// The DNS advice (issue 32, defect 7): a relay domain's SPF names the
// relay's include or says what to add; a CNAME never points at an IP
// address (no public host name: the record says so); a DKIM value longer
// than 255 octets is also given as quoted strings.
func TestRecordsAdvice(t *testing.T) {
	t.Parallel()
	key, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	pub, _ := x509.MarshalPKIXPublicKey(&key.PublicKey)
	d := Domain{Name: "shop.example", DKIMSelector: "pl1", DKIMPublicKey: base64.StdEncoding.EncodeToString(pub),
		Delivery: Delivery{Mode: ModeDirect}, TrackingDomain: "track.shop.example", AuthDomain: "bounces.shop.example"}

	named := NewService(nil, nil, Config{PublicHost: "mail.postline.example", SPFRecord: "v=spf1 ip4:192.0.2.1 ~all"})
	recs := byPurpose(named.Records(d))
	if r := recs["spf"]; r.Value != "v=spf1 ip4:192.0.2.1 ~all" || r.Note != "" {
		t.Errorf("direct delivery's SPF: %+v, want the operator's record", r)
	}
	for _, p := range []string{"tracking", "auth_return_path"} {
		if r := recs[p]; r.Type != "CNAME" || r.Value != "mail.postline.example" || !r.Required || r.Note != "" {
			t.Errorf("%s with a public host name: %+v", p, r)
		}
	}
	dkim := recs["dkim"]
	if len(dkim.Value) <= 255 || dkim.ValueSplit == "" {
		t.Fatalf("a 2048-bit DKIM value (%d octets) has no split form", len(dkim.Value))
	}
	parts := strings.Split(dkim.ValueSplit, `" "`)
	joined := strings.Trim(strings.Join(parts, ""), `"`)
	if len(parts) != 2 || joined != dkim.Value || len(strings.Trim(parts[0], `"`)) != 255 {
		t.Errorf("the split DKIM value %q: %d strings, joined equal %v; want 2 strings of at most 255 that join to the value",
			dkim.ValueSplit, len(parts), joined == dkim.Value)
	}
	if recs["dmarc"].ValueSplit != "" || recs["spf"].ValueSplit != "" {
		t.Error("a short value was split")
	}

	// No public host name: the CNAMEs say so, and are not required.
	unnamed := NewService(nil, nil, Config{})
	recs = byPurpose(unnamed.Records(d))
	for _, p := range []string{"tracking", "auth_return_path"} {
		if r := recs[p]; r.Value != "" || r.Required || !strings.Contains(r.Note, "--public-url") {
			t.Errorf("%s without a public host name: %+v, want no value, not required, a note naming --public-url", p, r)
		}
	}

	// Relays: a known one's include, else what to add.
	for host, include := range map[string]string{"smtp.mailgun.org": "mailgun.org", "smtp.eu.mailgun.org": "mailgun.org",
		"email-smtp.eu-west-1.amazonaws.com": "amazonses.com", "smtp.sendgrid.net": "sendgrid.net", "smtp.office365.com": "spf.protection.outlook.com"} {
		d.Delivery = Delivery{Mode: ModeSMTP, Host: host}
		r := byPurpose(named.Records(d))["spf"]
		if r.Value != "v=spf1 include:"+include+" ~all" || !strings.Contains(r.Note, host) || !strings.Contains(r.Note, "include:"+include) {
			t.Errorf("SPF through %s: %+v, want include:%s", host, r, include)
		}
	}
	for _, host := range []string{"smtp.relay.example", "ec2-1-2-3-4.compute.amazonaws.com", "notmailgun.org"} {
		d.Delivery = Delivery{Mode: ModeSMTP, Host: host}
		r := byPurpose(named.Records(d))["spf"]
		if !strings.Contains(r.Value, "RELAY-SPF-DOMAIN") || !strings.Contains(r.Note, host) || !strings.Contains(r.Note, "include:") {
			t.Errorf("SPF through the unknown relay %s: %+v, want what to add", host, r)
		}
	}
}
