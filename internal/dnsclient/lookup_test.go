package dnsclient_test

import (
	"context"
	"net/netip"
	"slices"
	"strings"
	"testing"

	"github.com/postline/postline/internal/dnsclient"
)

func TestLookupMX(t *testing.T) {
	t.Parallel()
	f := setup(t)
	f.srv.AddMX("sorted.example", 20, "b.mx.example")
	f.srv.AddMX("sorted.example", 10, "Z.MX.example.")
	f.srv.AddMX("sorted.example", 10, "a.mx.example")
	f.srv.AddMX("null.example", 0, ".") // RFC 7505
	f.srv.AddA("nomx.example", "192.0.2.1")
	f.srv.AddMX("xn--bcher-kva.example", 5, "mx.xn--bcher-kva.example")
	f.srv.AddCNAME("alias.example", "sorted.example")

	tests := []struct {
		domain   string
		want     []dnsclient.MX
		wantKind dnsclient.Kind
		wantNull bool
	}{
		{domain: "sorted.example", want: []dnsclient.MX{{"a.mx.example", 10}, {"z.mx.example", 10}, {"b.mx.example", 20}}},
		{domain: "SORTED.Example.", want: []dnsclient.MX{{"a.mx.example", 10}, {"z.mx.example", 10}, {"b.mx.example", 20}}},
		{domain: "null.example", want: []dnsclient.MX{{".", 0}}, wantNull: true},
		{domain: "missing.example", wantKind: dnsclient.NotFound},
		{domain: "nomx.example", wantKind: dnsclient.NoData},
		{domain: "example", wantKind: dnsclient.NoData}, // empty non-terminal
		{domain: "Bücher.example", want: []dnsclient.MX{{"mx.xn--bcher-kva.example", 5}}},
		{domain: "alias.example", want: []dnsclient.MX{{"a.mx.example", 10}, {"z.mx.example", 10}, {"b.mx.example", 20}}},
	}
	for _, tt := range tests {
		got, err := f.r.LookupMX(context.Background(), tt.domain)
		if tt.wantKind != 0 {
			if !isKind(err, tt.wantKind) {
				t.Errorf("LookupMX(%q) = %v, %v; want kind %v", tt.domain, got, err, tt.wantKind)
			}
			continue
		}
		if err != nil || !slices.Equal(got, tt.want) {
			t.Errorf("LookupMX(%q) = %v, %v; want %v", tt.domain, got, err, tt.want)
		}
		if null := dnsclient.IsNullMX(got); null != tt.wantNull {
			t.Errorf("IsNullMX(LookupMX(%q)) = %v, want %v", tt.domain, null, tt.wantNull)
		}
	}
}

func TestLookupTXT(t *testing.T) {
	t.Parallel()
	f := setup(t)
	spf := "v=spf1 " + strings.Repeat("ip4:192.0.2.1 ", 30) + "-all" // > 255 bytes: split
	f.srv.AddTXT("example.com", spf)
	f.srv.AddTXT("_dmarc.example.com", "v=DMARC1; ", "p=reject")
	big := strings.Repeat("k", 1500) // > EDNS size: truncated over UDP
	f.srv.AddTXT("sel._domainkey.example.com", big)

	tests := []struct {
		name string
		want []string
	}{
		{"example.com", []string{spf}},
		{"_DMARC.example.com", []string{"v=DMARC1; p=reject"}},
		{"sel._domainkey.example.com", []string{big}},
	}
	for _, tt := range tests {
		got, err := f.r.LookupTXT(context.Background(), tt.name)
		if err != nil || !slices.Equal(got, tt.want) {
			t.Errorf("LookupTXT(%q) = %.60q, %v; want %.60q", tt.name, got, err, tt.want)
		}
	}
}

func TestLookupTXTFallsBackToTCP(t *testing.T) {
	t.Parallel()
	f := setup(t)
	f.srv.AddTXT("big.example", strings.Repeat("x", 2000))
	if _, err := f.r.LookupTXT(context.Background(), "big.example"); err != nil {
		t.Fatalf("LookupTXT(big.example): %v", err)
	}
	if got := f.srv.Queries(); got != 2 {
		t.Errorf("queries for a truncated answer = %d, want 2 (UDP then TCP)", got)
	}
}

func TestLookupIP(t *testing.T) {
	t.Parallel()
	f := setup(t)
	f.srv.AddA("both.example", "192.0.2.1")
	f.srv.AddAAAA("both.example", "2001:db8::1")
	f.srv.AddA("v4.example", "192.0.2.2")
	f.srv.AddAAAA("v6.example", "2001:db8::2")
	f.srv.AddMX("noaddr.example", 10, "mx.example")

	tests := []struct {
		host     string
		want     []string
		wantKind dnsclient.Kind
	}{
		{host: "both.example", want: []string{"192.0.2.1", "2001:db8::1"}},
		{host: "v4.example", want: []string{"192.0.2.2"}},
		{host: "v6.example", want: []string{"2001:db8::2"}},
		{host: "noaddr.example", wantKind: dnsclient.NoData},
		{host: "missing.example", wantKind: dnsclient.NotFound},
	}
	for _, tt := range tests {
		got, err := f.r.LookupIP(context.Background(), tt.host)
		if tt.wantKind != 0 {
			if !isKind(err, tt.wantKind) {
				t.Errorf("LookupIP(%q) = %v, %v; want kind %v", tt.host, got, err, tt.wantKind)
			}
			continue
		}
		var want []netip.Addr
		for _, s := range tt.want {
			want = append(want, netip.MustParseAddr(s))
		}
		if err != nil || !slices.Equal(got, want) {
			t.Errorf("LookupIP(%q) = %v, %v; want %v", tt.host, got, err, want)
		}
	}
}

func TestLookupCNAME(t *testing.T) {
	t.Parallel()
	f := setup(t)
	f.srv.AddCNAME("track.example.com", "Track.Postline.Example.")
	f.srv.AddA("plain.example.com", "192.0.2.1")

	got, err := f.r.LookupCNAME(context.Background(), "track.example.com")
	if err != nil || got != "track.postline.example" {
		t.Errorf("LookupCNAME(track.example.com) = %q, %v; want track.postline.example", got, err)
	}
	if got, err := f.r.LookupCNAME(context.Background(), "plain.example.com"); !dnsclient.IsNoData(err) {
		t.Errorf("LookupCNAME(plain.example.com) = %q, %v; want NoData", got, err)
	}
}

func TestInvalidNames(t *testing.T) {
	t.Parallel()
	f := setup(t)
	for _, name := range []string{
		"",
		".",
		"exa mple.com",
		"a..b.example",
		"-leading.example",
		"semi;colon.example",
		strings.Repeat("a", 64) + ".example",
		strings.Repeat("abcdefgh.", 32) + "example",
	} {
		got, err := f.r.LookupMX(context.Background(), name)
		if !dnsclient.IsInvalid(err) {
			t.Errorf("LookupMX(%q) = %v, %v; want an Invalid error", name, got, err)
		}
	}
	if n := f.srv.Queries(); n != 0 {
		t.Errorf("invalid names sent %d queries, want 0", n)
	}
}

func isKind(err error, k dnsclient.Kind) bool {
	switch k {
	case dnsclient.NotFound:
		return dnsclient.IsNotFound(err)
	case dnsclient.NoData:
		return dnsclient.IsNoData(err)
	case dnsclient.Temporary:
		return dnsclient.IsTemporary(err)
	case dnsclient.Invalid:
		return dnsclient.IsInvalid(err)
	}
	return false
}

func TestLookupTLSA(t *testing.T) {
	t.Parallel()
	f := setup(t)
	f.srv.AddTLSA("_25._tcp.signed.example", 3, 1, 1, []byte{0xab, 0xcd})
	f.srv.AddTLSA("_25._tcp.signed.example", 2, 0, 2, []byte{0x01})
	f.srv.SetAuthenticated("_25._tcp.signed.example", true)
	f.srv.AddTLSA("_25._tcp.unsigned.example", 3, 1, 1, []byte{0xab, 0xcd})
	f.srv.AddA("signed.example", "192.0.2.1")
	f.srv.SetAuthenticated("signed.example", true)
	f.srv.AddA("unsigned.example", "192.0.2.2")
	ctx := context.Background()

	recs, authed, err := f.r.LookupTLSA(ctx, "_25._tcp.signed.example")
	want := []dnsclient.TLSA{rec(3, 1, 1, []byte{0xab, 0xcd}), rec(2, 0, 2, []byte{0x01})}
	if err != nil || !authed || len(recs) != 2 {
		t.Fatalf("LookupTLSA(signed) = %v, %v, %v; want 2 authenticated records", recs, authed, err)
	}
	for i := range want {
		if recs[i].Usage != want[i].Usage || recs[i].Selector != want[i].Selector ||
			recs[i].MatchingType != want[i].MatchingType || string(recs[i].Data) != string(want[i].Data) {
			t.Errorf("record %d = %+v, want %+v", i, recs[i], want[i])
		}
	}
	if recs, authed, err := f.r.LookupTLSA(ctx, "_25._tcp.unsigned.example"); err != nil || authed || len(recs) != 1 {
		t.Errorf("LookupTLSA(unsigned) = %v, %v, %v; want 1 record, not authenticated", recs, authed, err)
	}
	if _, _, err := f.r.LookupTLSA(ctx, "_25._tcp.missing.example"); !isKind(err, dnsclient.NotFound) {
		t.Errorf("LookupTLSA(missing) error = %v, want not found", err)
	}
	if !f.r.AddrsAuthenticated(ctx, "signed.example") || f.r.AddrsAuthenticated(ctx, "unsigned.example") {
		t.Errorf("AddrsAuthenticated: signed %v, unsigned %v; want true, false",
			f.r.AddrsAuthenticated(ctx, "signed.example"), f.r.AddrsAuthenticated(ctx, "unsigned.example"))
	}
	f.srv.AddMX("signed.example", 10, "mx.signed.example")
	f.srv.AddMX("unsigned.example", 10, "mx.unsigned.example")
	if !f.r.MXAuthenticated(ctx, "signed.example") || f.r.MXAuthenticated(ctx, "unsigned.example") {
		t.Errorf("MXAuthenticated: signed %v, unsigned %v; want true, false",
			f.r.MXAuthenticated(ctx, "signed.example"), f.r.MXAuthenticated(ctx, "unsigned.example"))
	}
	// The AD bit is cached with the answer.
	before := f.srv.Queries()
	if _, authed, _ := f.r.LookupTLSA(ctx, "_25._tcp.signed.example"); !authed || f.srv.Queries() != before {
		t.Errorf("cached LookupTLSA: authenticated %v, %d new queries; want true, 0", authed, f.srv.Queries()-before)
	}
}

func rec(usage, selector, matching uint8, data []byte) dnsclient.TLSA {
	return dnsclient.TLSA{Usage: usage, Selector: selector, MatchingType: matching, Data: data}
}
