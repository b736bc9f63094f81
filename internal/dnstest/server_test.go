package dnstest_test

import (
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/miekg/dns"
	"github.com/postline/postline/internal/dnstest"
)

// exchange sends one query for name/qtype over network ("udp" or "tcp").
func exchange(t *testing.T, addr, network, name string, qtype uint16) *dns.Msg {
	t.Helper()
	m := new(dns.Msg)
	m.SetQuestion(dns.Fqdn(name), qtype)
	c := &dns.Client{Net: network, Timeout: time.Second}
	resp, _, err := c.Exchange(m, addr)
	if err != nil {
		t.Fatalf("%s %s %s: %v", network, name, dns.TypeToString[qtype], err)
	}
	return resp
}

func TestAnswers(t *testing.T) {
	t.Parallel()
	s := dnstest.New(t)
	s.SetTTL(42)
	s.AddMX("Example.com", 10, "mx.example.com")
	s.AddA("mx.example.com", "192.0.2.1")
	s.AddCNAME("www.example.com", "mx.example.com")
	s.SetNegativeTTL(7)
	s.SetRcode("broken.example.com", dns.RcodeServerFailure)

	tests := []struct {
		name      string
		qtype     uint16
		wantRcode int
		wantTypes []uint16 // answer section types, in order
		wantSOA   bool
	}{
		{"example.com", dns.TypeMX, dns.RcodeSuccess, []uint16{dns.TypeMX}, false},
		{"EXAMPLE.COM", dns.TypeMX, dns.RcodeSuccess, []uint16{dns.TypeMX}, false},
		{"example.com", dns.TypeTXT, dns.RcodeSuccess, nil, true}, // no data
		{"com", dns.TypeA, dns.RcodeSuccess, nil, true},           // empty non-terminal
		{"nope.example.com", dns.TypeA, dns.RcodeNameError, nil, true},
		{"www.example.com", dns.TypeA, dns.RcodeSuccess, []uint16{dns.TypeCNAME, dns.TypeA}, false},
		{"www.example.com", dns.TypeCNAME, dns.RcodeSuccess, []uint16{dns.TypeCNAME}, false},
		{"broken.example.com", dns.TypeA, dns.RcodeServerFailure, nil, false},
	}
	for _, tt := range tests {
		for _, network := range []string{"udp", "tcp"} {
			resp := exchange(t, s.Addr(), network, tt.name, tt.qtype)
			var types []uint16
			for _, rr := range resp.Answer {
				types = append(types, rr.Header().Rrtype)
				if rr.Header().Ttl != 42 {
					t.Errorf("%s %s %s: TTL %d, want 42", network, tt.name, dns.TypeToString[tt.qtype], rr.Header().Ttl)
				}
			}
			if resp.Rcode != tt.wantRcode || !slices.Equal(types, tt.wantTypes) {
				t.Errorf("%s %s %s: rcode %s answer %v; want %s %v", network, tt.name, dns.TypeToString[tt.qtype],
					dns.RcodeToString[resp.Rcode], types, dns.RcodeToString[tt.wantRcode], tt.wantTypes)
			}
			hasSOA := len(resp.Ns) == 1 && resp.Ns[0].(*dns.SOA).Minttl == 7 && resp.Ns[0].Header().Ttl == 7
			if hasSOA != tt.wantSOA {
				t.Errorf("%s %s %s: authority %v, want SOA with TTL 7: %v", network, tt.name, dns.TypeToString[tt.qtype], resp.Ns, tt.wantSOA)
			}
		}
	}
	if got, want := s.Queries(), 2*len(tests); got != want {
		t.Errorf("Queries() = %d, want %d", got, want)
	}
}

func TestTruncatesOverUDP(t *testing.T) {
	t.Parallel()
	s := dnstest.New(t)
	s.AddTXT("big.example", strings.Repeat("x", 1000))
	if resp := exchange(t, s.Addr(), "udp", "big.example", dns.TypeTXT); !resp.Truncated || len(resp.Answer) != 0 {
		t.Errorf("UDP answer of 1000 bytes without EDNS0: TC=%v, %d records; want TC and none", resp.Truncated, len(resp.Answer))
	}
	resp := exchange(t, s.Addr(), "tcp", "big.example", dns.TypeTXT)
	if resp.Truncated || len(resp.Answer) != 1 || strings.Join(resp.Answer[0].(*dns.TXT).Txt, "") != strings.Repeat("x", 1000) {
		t.Errorf("TCP answer: TC=%v, %v; want the whole record", resp.Truncated, resp.Answer)
	}
}

func TestDelayInterruptedByClose(t *testing.T) {
	t.Parallel()
	s, err := dnstest.Start("127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s.SetDelay("slow.example", time.Minute)
	go func() {
		m := new(dns.Msg)
		m.SetQuestion("slow.example.", dns.TypeA)
		(&dns.Client{Net: "tcp", Timeout: 5 * time.Second}).Exchange(m, s.Addr())
	}()
	for s.Queries() == 0 {
		time.Sleep(time.Millisecond) // polling a counter the server owns; no signal to wait on
	}
	start := time.Now()
	if err := s.Close(); err != nil {
		t.Errorf("Close: %v", err)
	}
	if elapsed := time.Since(start); elapsed > time.Second {
		t.Errorf("Close took %v with a delayed query in flight", elapsed)
	}
	if err := s.Close(); err != nil {
		t.Errorf("second Close: %v", err)
	}
}

func TestTLSAAuthenticated(t *testing.T) {
	t.Parallel()
	s := dnstest.New(t)
	s.AddTLSA("_25._tcp.mx.example", 3, 1, 1, []byte{0xde, 0xad, 0xbe, 0xef})
	s.AddTLSA("_25._tcp.plain.example", 3, 1, 1, []byte{1})
	s.SetAuthenticated("_25._tcp.mx.example", true)
	ask := func(name string, ad bool) *dns.Msg {
		m := new(dns.Msg)
		m.SetQuestion(dns.Fqdn(name), dns.TypeTLSA)
		m.AuthenticatedData = ad
		resp, _, err := (&dns.Client{Net: "udp", Timeout: time.Second}).Exchange(m, s.Addr())
		if err != nil {
			t.Fatalf("TLSA %s: %v", name, err)
		}
		return resp
	}
	resp := ask("_25._tcp.mx.example", true)
	if !resp.AuthenticatedData || len(resp.Answer) != 1 {
		t.Fatalf("TLSA at a name marked authenticated, AD asked: AD=%v, %v; want AD and one record", resp.AuthenticatedData, resp.Answer)
	}
	if tl := resp.Answer[0].(*dns.TLSA); tl.Usage != 3 || tl.Selector != 1 || tl.MatchingType != 1 || tl.Certificate != "deadbeef" {
		t.Errorf("TLSA record = %v, want 3 1 1 deadbeef", tl)
	}
	if resp := ask("_25._tcp.mx.example", false); resp.AuthenticatedData {
		t.Error("AD set on an answer to a query that asked for neither AD nor DO")
	}
	if resp := ask("_25._tcp.plain.example", true); resp.AuthenticatedData || len(resp.Answer) != 1 {
		t.Errorf("TLSA at an unmarked name: AD=%v, %v; want no AD and one record", resp.AuthenticatedData, resp.Answer)
	}
	s.SetAuthenticated("_25._tcp.mx.example", false)
	if resp := ask("_25._tcp.mx.example", true); resp.AuthenticatedData {
		t.Error("AD still set after SetAuthenticated(false)")
	}
}

func TestRemove(t *testing.T) {
	t.Parallel()
	s := dnstest.New(t)
	s.AddTXT("example.com", "old")
	s.AddA("example.com", "192.0.2.1")
	s.Remove("example.com", dns.TypeTXT)
	if resp := exchange(t, s.Addr(), "udp", "example.com", dns.TypeTXT); resp.Rcode != dns.RcodeSuccess || len(resp.Answer) != 0 {
		t.Errorf("TXT after Remove: %s %v, want no data", dns.RcodeToString[resp.Rcode], resp.Answer)
	}
	if resp := exchange(t, s.Addr(), "udp", "example.com", dns.TypeA); len(resp.Answer) != 1 {
		t.Errorf("A after removing TXT: %v, want the A record kept", resp.Answer)
	}
	s.Remove("example.com", dns.TypeA)
	if resp := exchange(t, s.Addr(), "udp", "example.com", dns.TypeA); resp.Rcode != dns.RcodeNameError {
		t.Errorf("A after removing every record: %s, want NXDOMAIN", dns.RcodeToString[resp.Rcode])
	}
}
