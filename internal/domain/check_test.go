package domain

import (
	"bytes"
	"context"
	"github.com/postline/postline/internal/dnsclient"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// oneDomain is a Store holding one domain; what Verify writes is kept.
type oneDomain struct {
	Store
	d       Domain
	checked *DNSCheck
}

func (s *oneDomain) HostHolder(context.Context, string) (int64, error) { return 0, nil }
func (s *oneDomain) VerifyDomain(_ context.Context, d Domain, _ string) error {
	s.d.VerifiedAt, s.d.ClaimExpiresAt = d.VerifiedAt, d.ClaimExpiresAt
	return nil
}
func (s *oneDomain) SaveDNSCheck(_ context.Context, _ int64, c *DNSCheck) error {
	s.checked = c
	return nil
}

// spfOnly publishes an SPF record and nothing else.
type spfOnly struct{}

func (spfOnly) LookupTXT(_ context.Context, name string) ([]string, error) {
	if name == "shop.example" {
		return []string{"v=spf1 a mx ~all"}, nil
	}
	return nil, nil
}
func (spfOnly) LookupCNAME(context.Context, string) (string, error)      { return "", nil }
func (spfOnly) LookupMX(context.Context, string) ([]dnsclient.MX, error) { return nil, nil }

// A failed check of a verified domain leaves it verified, and is logged
// (naming the records) and counted.
func TestFailedCheckIsLoggedAndCounted(t *testing.T) {
	t.Parallel()
	var logs bytes.Buffer
	reg := prometheus.NewRegistry()
	m := NewMetrics(reg)
	verified := time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC)
	st := &oneDomain{d: Domain{ID: 1, AccountID: 1, Name: "shop.example", DKIMSelector: "pl1", DKIMPublicKey: "AAAA", VerifiedAt: &verified}}
	s := NewService(st, spfOnly{}, Config{Logger: slog.New(slog.NewTextHandler(&logs, nil)), Metrics: m})
	d, recs, err := s.Verify(context.Background(), st.d, false)
	if err != nil || !d.Verified() || !d.RecordsChanged() || st.d.VerifiedAt == nil || !st.d.VerifiedAt.Equal(verified) {
		t.Fatalf("Verify: verified %v, records changed %v, stored verified_at %v, %v", d.Verified(), d.RecordsChanged(), st.d.VerifiedAt, err)
	}
	if st.checked == nil || st.checked.OK || st.checked.Statuses["spf"] != StatusOK || st.checked.Statuses["dkim"] != StatusMissing {
		t.Fatalf("stored check %+v", st.checked)
	}
	if recs[1].Purpose != "dkim" || recs[1].Status != StatusMissing {
		t.Errorf("records returned: %+v", recs)
	}
	line := logs.String()
	if !strings.Contains(line, "level=WARN") || !strings.Contains(line, "domain=shop.example") || !strings.Contains(line, "stays verified") ||
		!strings.Contains(line, `records="dkim missing, dmarc missing"`) {
		t.Errorf("log: %s", line)
	}
	if got := counted(t, reg); got[CheckFailed] != 1 || got[CheckOK] != 0 || got[CheckDNSError] != 0 || len(got) != 3 {
		t.Errorf("postline_domain_dns_checks_total by outcome: %v, want failed 1, ok 0, dns_error 0", got)
	}
}

// counted reads postline_domain_dns_checks_total by outcome.
func counted(t *testing.T, reg *prometheus.Registry) map[string]float64 {
	t.Helper()
	families, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]float64{}
	for _, f := range families {
		if f.GetName() != "postline_domain_dns_checks_total" {
			continue
		}
		for _, m := range f.GetMetric() {
			out[m.GetLabel()[0].GetValue()] = m.GetCounter().GetValue()
		}
	}
	return out
}
