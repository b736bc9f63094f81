package mailgun

import (
	"strings"

	"github.com/postline/postline/internal/validation"
)

// Validation is one answer of Mailgun's /v4/address/validate, also a
// line of a bulk list's JSON results.
type Validation struct {
	Address             string   `json:"address"`
	IsDisposableAddress bool     `json:"is_disposable_address"`
	IsRoleAddress       bool     `json:"is_role_address"`
	Reason              []string `json:"reason"`
	Result              string   `json:"result"`
	Risk                string   `json:"risk"`
	DidYouMean          *string  `json:"did_you_mean"`
	Engagement          any      `json:"engagement"` // always null: Postline keeps no engagement data
	RootAddress         *string  `json:"root_address"`
}

// Mailgun's results, from least to most severe, and its risks likewise.
const (
	ResultDeliverable   = "deliverable"
	ResultUnknown       = "unknown"
	ResultCatchAll      = "catch_all"
	ResultUndeliverable = "undeliverable"
	ResultDoNotSend     = "do_not_send"

	RiskLow     = "low"
	RiskUnknown = "unknown"
	RiskMedium  = "medium"
	RiskHigh    = "high"
)

var (
	resultRank = map[string]int{ResultDeliverable: 0, ResultUnknown: 1, ResultCatchAll: 2, ResultUndeliverable: 3, ResultDoNotSend: 4}
	riskRank   = map[string]int{RiskLow: 0, RiskUnknown: 1, RiskMedium: 2, RiskHigh: 3}
)

// verdictOf maps one of Postline's deliverability reasons to Mailgun's
// result, risk and reason. The README's Mailgun section has this table.
var verdictOf = map[string]struct{ result, risk, reason string }{
	validation.DRInvalidSyntax:   {ResultUndeliverable, RiskHigh, "failed_syntax_check"},
	validation.DRDomainNotFound:  {ResultUndeliverable, RiskHigh, "no_mx"},
	validation.DRNoMailServer:    {ResultUndeliverable, RiskHigh, "no_mx"},
	validation.DRReservedDomain:  {ResultUndeliverable, RiskHigh, "reserved_domain"},
	validation.DRBlocklisted:     {ResultDoNotSend, RiskHigh, "blocklisted"},
	validation.DRDisposable:      {ResultDoNotSend, RiskHigh, "mailbox_is_disposable_address"},
	validation.DRDNSUnavailable:  {ResultUnknown, RiskUnknown, "dns_unavailable"},
	validation.DRRoleAccount:     {ResultDeliverable, RiskMedium, "mailbox_is_role_address"},
	validation.DRSpamtrapRisk:    {ResultDoNotSend, RiskHigh, "spamtrap_risk"},
	validation.DRMailboxNotFound: {ResultUndeliverable, RiskHigh, "mailbox_does_not_exist"},
	validation.DRMailboxFull:     {ResultUnknown, RiskMedium, "mailbox_full"},
	validation.DRCatchAll:        {ResultCatchAll, RiskMedium, "catch_all"},
	validation.DRGreylisted:      {ResultUnknown, RiskUnknown, "greylisted"},
	validation.DRSMTPUnavailable: {ResultUnknown, RiskUnknown, "smtp_error"},
}

// base is the answer of a verdict without reasons.
var base = map[string][2]string{
	validation.Deliverable:   {ResultDeliverable, RiskLow},
	validation.Risky:         {ResultUnknown, RiskMedium},
	validation.Undeliverable: {ResultUndeliverable, RiskHigh},
	validation.Unknown:       {ResultUnknown, RiskUnknown},
}

// FromResult maps Postline's verdict to Mailgun's: the most severe result
// and risk of its deliverability reasons (or of the verdict itself when
// it has none), each reason named as Mailgun names it.
func FromResult(r validation.Result) Validation {
	b, ok := base[r.Deliverability]
	if !ok {
		b = base[validation.Unknown]
	}
	v := Validation{Address: r.Email, Reason: []string{}, Result: b[0], Risk: b[1],
		IsDisposableAddress: r.Reason == validation.ReasonDisposable}
	for _, w := range r.Warnings {
		if w == validation.WarnRoleAccount {
			v.IsRoleAddress = true
		}
	}
	if len(r.DeliverabilityReasons) > 0 {
		v.Result, v.Risk = ResultDeliverable, RiskLow
	}
	for _, code := range r.DeliverabilityReasons {
		m, ok := verdictOf[code]
		if !ok {
			m = struct{ result, risk, reason string }{ResultUnknown, RiskUnknown, code}
		}
		if resultRank[m.result] > resultRank[v.Result] {
			v.Result = m.result
		}
		if riskRank[m.risk] > riskRank[v.Risk] {
			v.Risk = m.risk
		}
		if !contains(v.Reason, m.reason) {
			v.Reason = append(v.Reason, m.reason)
		}
	}
	if r.Suggestion != "" {
		s := r.Suggestion
		v.DidYouMean = &s
	}
	if root, ok := rootAddress(r.Email); ok {
		v.RootAddress = &root
	}
	return v
}

// rootAddress is the address without its +tag, as Mailgun gives for an
// alias; ok is false when the address has none.
func rootAddress(addr string) (string, bool) {
	at := strings.LastIndexByte(addr, '@')
	if at <= 0 {
		return "", false
	}
	local, dom := addr[:at], addr[at:]
	plus := strings.IndexByte(local, '+')
	if plus <= 0 || strings.HasPrefix(local, `"`) {
		return "", false
	}
	return local[:plus] + dom, true
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}
