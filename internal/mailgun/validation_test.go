package mailgun_test

import (
	"strings"
	"testing"

	"github.com/postline/postline/internal/mailgun"
	"github.com/postline/postline/internal/validation"
)

// TestFromResult: the README's table, including several reasons at once
// (the most severe result and risk win, each reason once) and the
// verdicts without reasons.
func TestFromResult(t *testing.T) {
	for _, c := range []struct {
		verdict            string
		reasons            []string
		result, risk, want string
	}{
		{validation.Deliverable, nil, "deliverable", "low", ""},
		{validation.Unknown, nil, "unknown", "unknown", ""},
		{validation.Risky, []string{validation.DRRoleAccount}, "deliverable", "medium", "mailbox_is_role_address"},
		{validation.Risky, []string{validation.DRCatchAll, validation.DRRoleAccount}, "catch_all", "medium", "catch_all,mailbox_is_role_address"},
		{validation.Unknown, []string{validation.DRGreylisted, validation.DRRoleAccount}, "unknown", "medium", "greylisted,mailbox_is_role_address"},
		{validation.Risky, []string{validation.DRMailboxFull}, "unknown", "medium", "mailbox_full"},
		{validation.Undeliverable, []string{validation.DRMailboxNotFound}, "undeliverable", "high", "mailbox_does_not_exist"},
		{validation.Undeliverable, []string{validation.DRBlocklisted}, "do_not_send", "high", "blocklisted"},
		{validation.Risky, []string{validation.DRRoleAccount, validation.DRSpamtrapRisk}, "do_not_send", "high", "mailbox_is_role_address,spamtrap_risk"},
		{validation.Undeliverable, []string{validation.DRNoMailServer, validation.DRDomainNotFound}, "undeliverable", "high", "no_mx"},
		{validation.Unknown, []string{validation.DRSMTPUnavailable}, "unknown", "unknown", "smtp_error"},
	} {
		v := mailgun.FromResult(validation.Result{Email: "a+b@x.example", Deliverability: c.verdict, DeliverabilityReasons: c.reasons})
		if v.Result != c.result || v.Risk != c.risk || strings.Join(v.Reason, ",") != c.want {
			t.Errorf("%s %v: %s %s %v, want %s %s %s", c.verdict, c.reasons, v.Result, v.Risk, v.Reason, c.result, c.risk, c.want)
		}
		if v.RootAddress == nil || *v.RootAddress != "a@x.example" || v.Engagement != nil || v.Reason == nil {
			t.Errorf("%v: root %v engagement %v reason %v", c.reasons, v.RootAddress, v.Engagement, v.Reason)
		}
	}
}
