package validation

import (
	"context"
	"time"
)

// Deliverability verdicts: one answer to act on, beside is_valid (whose
// meaning does not change). The mapping from the checks is the table in
// doc.go.
const (
	Deliverable   = "deliverable"
	Undeliverable = "undeliverable"
	Risky         = "risky"
	Unknown       = "unknown"
)

// Deliverability reasons (deliverability_reasons).
const (
	DRInvalidSyntax   = "invalid_syntax"
	DRDomainNotFound  = "domain_not_found"
	DRNoMailServer    = "no_mail_server"
	DRReservedDomain  = "reserved_domain"
	DRBlocklisted     = "blocklisted"
	DRDisposable      = "disposable"
	DRDNSUnavailable  = "dns_unavailable"
	DRRoleAccount     = "role_account"
	DRSpamtrapRisk    = "spamtrap_risk"
	DRMailboxNotFound = "mailbox_not_found"
	DRMailboxFull     = "mailbox_full"
	DRCatchAll        = "catch_all"
	DRGreylisted      = "greylisted"
	DRSMTPUnavailable = "smtp_unavailable"
)

// invalidVerdicts maps a failing check to its verdict and reason.
var invalidVerdicts = map[string][2]string{
	ReasonSyntax:         {Undeliverable, DRInvalidSyntax},
	ReasonNXDomain:       {Undeliverable, DRDomainNotFound},
	ReasonNullMX:         {Undeliverable, DRNoMailServer},
	ReasonNoMailServer:   {Undeliverable, DRNoMailServer},
	ReasonReservedDomain: {Undeliverable, DRReservedDomain},
	ReasonBlocklisted:    {Undeliverable, DRBlocklisted},
	ReasonDisposable:     {Risky, DRDisposable},
	ReasonDNSUnavailable: {Unknown, DRDNSUnavailable},
}

// withVerdict sets r's deliverability from its checks (and its mailbox
// probe, when one ran).
func withVerdict(r Result) Result {
	reasons := []string{}
	verdict := Deliverable
	if !r.IsValid {
		v, ok := invalidVerdicts[r.Reason]
		if !ok {
			v = [2]string{Undeliverable, r.Reason}
		}
		r.Deliverability, r.DeliverabilityReasons = v[0], []string{v[1]}
		return r
	}
	if r.Mailbox != nil {
		verdict, reasons = r.Mailbox.verdict()
	}
	for _, w := range r.Warnings {
		if w == WarnRoleAccount {
			reasons = append(reasons, DRRoleAccount)
		}
	}
	if r.IsSpamtrap {
		reasons = append(reasons, DRSpamtrapRisk)
	}
	if verdict == Deliverable && len(reasons) > 0 {
		verdict = Risky
	}
	r.Deliverability, r.DeliverabilityReasons = verdict, reasons
	return r
}

type mailboxKey struct{}

// mailboxAsk is a request's wish for probes, and when its probes must
// have finished (zero: each probe's own budget only).
type mailboxAsk struct{ until time.Time }

// WithMailboxCheck asks the validations run with ctx to probe the
// mailbox too (check_mailbox), where the server permits probing.
func WithMailboxCheck(ctx context.Context) context.Context {
	return context.WithValue(ctx, mailboxKey{}, mailboxAsk{})
}

// WithMailboxCheckUntil is WithMailboxCheck with a budget for all the
// request's probes together: a probe still running at until answers
// smtp_unavailable, while the rest of the validation goes on.
func WithMailboxCheckUntil(ctx context.Context, until time.Time) context.Context {
	return context.WithValue(ctx, mailboxKey{}, mailboxAsk{until: until})
}

func mailboxCheck(ctx context.Context) bool { _, ok := ctx.Value(mailboxKey{}).(mailboxAsk); return ok }

// probeDeadline is the request's budget for its probes, if it set one.
func probeDeadline(ctx context.Context) (time.Time, bool) {
	a, _ := ctx.Value(mailboxKey{}).(mailboxAsk)
	return a.until, !a.until.IsZero()
}

// Probing reports whether the server permits mailbox probes.
func (v *Validator) Probing() bool { return v.prober != nil }
