package domain

import (
	"context"
	"sort"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/postline/postline/internal/apperr"
)

// DNSCheck is one look-up of a domain's records.
type DNSCheck struct {
	At time.Time
	// OK says every required record was found as it must be published.
	OK bool
	// Statuses is each record's state (StatusOK, StatusMissing ...) by
	// its purpose (spf, dkim ...).
	Statuses map[string]string
}

// Check outcomes, as postline_domain_dns_checks_total counts them.
const (
	CheckOK       = "ok"        // every required record in place
	CheckFailed   = "failed"    // a required record is missing or differs
	CheckDNSError = "dns_error" // a look-up failed, and nothing was found wrong
)

// CheckOutcomes lists the outcomes.
var CheckOutcomes = []string{CheckOK, CheckFailed, CheckDNSError}

// Outcome sums the check up for the metric and the log.
func (c DNSCheck) Outcome() string {
	if c.OK {
		return CheckOK
	}
	for _, st := range c.Statuses {
		if st == StatusMissing || st == StatusMismatch {
			return CheckFailed
		}
	}
	return CheckDNSError
}

// RecordsAdvice says what to do after a check that did not find every
// record in place: publish what is missing or differs; or, when the
// look-ups themselves failed and nothing was found wrong, not the records
// but the look-ups are the matter.
func (d Domain) RecordsAdvice() string {
	if d.DNSCheck != nil && !d.DNSCheck.OK && d.DNSCheck.Outcome() == CheckDNSError {
		return "the DNS look-ups failed (records marked dns_error) and found nothing wrong: verify again later, " +
			"and if it goes on, check the server's resolver (--dns-server)"
	}
	return "publish the records marked missing or mismatch"
}

// failing lists the records not found as published, "purpose status", sorted.
func (c DNSCheck) failing() []string {
	var out []string
	for p, st := range c.Statuses {
		if st != StatusOK {
			out = append(out, p+" "+st)
		}
	}
	sort.Strings(out)
	return out
}

// Metrics counts DNS checks: postline_domain_dns_checks_total{outcome}.
type Metrics struct{ checks *prometheus.CounterVec }

// NewMetrics registers the domain metrics with reg (nil: not registered).
func NewMetrics(reg prometheus.Registerer) *Metrics {
	m := &Metrics{checks: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "postline_domain_dns_checks_total",
		Help: "Checks of sending domains' DNS records (verify now, postline domain verify, the daily re-check) by outcome: " +
			"ok, failed (a required record missing or different), dns_error (a look-up failed)."}, []string{"outcome"})}
	for _, o := range CheckOutcomes {
		m.checks.WithLabelValues(o)
	}
	if reg != nil {
		reg.MustRegister(m.checks)
	}
	return m
}

func (m *Metrics) count(outcome string) {
	if m != nil {
		m.checks.WithLabelValues(outcome).Inc()
	}
}

// Verify looks up every record and marks a claim verified when all
// required ones are in place. A failed check changes no verification: a
// verified domain stays verified and keeps sending (a DNS hiccup, or a
// domain verified with force, must not stop its mail), and a claim never
// verified stays pending with its expiry. Either way the check is stored,
// so that the domain's page shows each record's state, and it is logged
// and counted. With force the operator marks the domain verified without
// looking anything up.
func (s *Service) Verify(ctx context.Context, d Domain, force bool) (Domain, []Record, error) {
	d, err := s.Current(ctx, d)
	if err != nil {
		return d, nil, err
	}
	if err := d.CheckClaim(); err != nil {
		return d, nil, err
	}
	if err := d.CheckReadable(); err != nil {
		return d, nil, err
	}
	for _, h := range []struct{ host, what string }{{d.Name, "domain"}, {d.TrackingDomain, "tracking host"}, {d.AuthDomain, "authentication host"}} {
		if h.host == "" {
			continue
		}
		if err := s.checkHost(ctx, d.AccountID, h.host, h.what); err != nil {
			return d, nil, err
		}
	}
	recs := s.Records(d)
	now := s.cfg.Now().UTC()
	ended := "another account verified " + d.Name + " first"
	if force {
		d.VerifiedAt, d.ClaimExpiresAt, d.DNSCheck = &now, nil, nil
		if err := s.store.VerifyDomain(ctx, d, ended); err != nil {
			return d, recs, err
		}
		return d, recs, s.store.SaveDNSCheck(ctx, d.ID, nil) // an older failed check no longer stands
	}
	if s.resolver == nil {
		return d, nil, apperr.Errorf(apperr.Unavailable, "no DNS resolver configured")
	}
	check := s.lookUp(ctx, recs, now)
	s.note(d, check, "verify")
	if check.OK && !d.Verified() {
		d.VerifiedAt, d.ClaimExpiresAt = &now, nil
		if err := s.store.VerifyDomain(ctx, d, ended); err != nil {
			return d, recs, err
		}
	}
	d.DNSCheck = &check
	return d, recs, s.store.SaveDNSCheck(ctx, d.ID, &check)
}

// lookUp checks every record, setting its Status.
func (s *Service) lookUp(ctx context.Context, recs []Record, now time.Time) DNSCheck {
	c := DNSCheck{At: now, OK: true, Statuses: map[string]string{}}
	for i := range recs {
		recs[i].Status = s.check(ctx, recs[i])
		c.Statuses[recs[i].Purpose] = recs[i].Status
		if recs[i].Required && recs[i].Status != StatusOK {
			c.OK = false
		}
	}
	return c
}

// note logs and counts a check.
func (s *Service) note(d Domain, c DNSCheck, by string) {
	outcome := c.Outcome()
	s.cfg.Metrics.count(outcome)
	if outcome == CheckOK {
		s.cfg.Logger.Debug("domain DNS check", "domain", d.Name, "by", by, "outcome", outcome)
		return
	}
	msg := "domain DNS check failed: the domain is not verified"
	if d.Verified() {
		msg = "domain DNS check failed: the records changed since verification (the domain stays verified)"
	}
	s.cfg.Logger.Warn(msg, "domain", d.Name, "account", d.AccountID, "by", by, "outcome", outcome,
		"records", strings.Join(c.failing(), ", "))
}

// CheckedRecords is Records with each record's state at the last check
// (none for a record the check did not cover).
func (s *Service) CheckedRecords(d Domain) []Record {
	recs := s.Records(d)
	if d.DNSCheck != nil {
		for i := range recs {
			recs[i].Status = d.DNSCheck.Statuses[recs[i].Purpose]
		}
	}
	return recs
}

// RecheckBatch is how many domains one re-check pass looks up at most,
// one after another: a few at a time keep the resolver and the database
// unhurried however many domains there are.
const RecheckBatch = 10

// RecheckDue looks up the records of up to RecheckBatch verified domains
// last checked (or verified) more than every ago, and stores, logs and
// counts what it finds. It never changes a verification: a failed check
// is shown as "records changed since verification". It returns how many
// domains it checked.
func (s *Service) RecheckDue(ctx context.Context, every time.Duration) (int, error) {
	if s.resolver == nil {
		return 0, apperr.Errorf(apperr.Unavailable, "no DNS resolver configured")
	}
	now := s.cfg.Now().UTC()
	due, err := s.store.DueForCheck(ctx, now.Add(-every), RecheckBatch)
	if err != nil {
		return 0, err
	}
	for i, d := range due {
		check := s.lookUp(ctx, s.Records(d), s.cfg.Now().UTC())
		if ctx.Err() != nil {
			return i, ctx.Err() // cut short: the look-ups say nothing
		}
		s.note(d, check, "recheck")
		if err := s.store.SaveDNSCheck(ctx, d.ID, &check); err != nil {
			return i, err
		}
	}
	return len(due), nil
}
