package validation_test

import (
	"context"
	"testing"

	"github.com/postline/postline/internal/validation"
)

func TestSpamtrapExamples(t *testing.T) {
	t.Parallel()
	f := setup(t)
	tests := []struct {
		email string
		trap  bool
	}{
		{"jane.doe@acme-mail.com", false},
		{"info@acme-mail.com", false},
		{"spamtrap@acme-mail.com", true},
		{"my.honey-pot.7@acme-mail.com", true},
		{"trap01@acme-mail.com", true},
		{"bootstrap@acme-mail.com", false},
		{"x7k2q9vb3z8w@a-only.net", false}, // random + implicit MX: suspicious, below 0.5
		{"jane@gmial.com", true},           // typo + disposable
		{"spamtrap@@", true},               // invalid, still scored
	}
	for _, tt := range tests {
		got := f.validate(t, validation.ModeStandard, tt.email)
		if got.IsSpamtrap != tt.trap || got.IsSpamtrap != (got.SpamtrapScore >= 0.5) {
			t.Errorf("%q: IsSpamtrap=%v score=%v, want IsSpamtrap=%v", tt.email, got.IsSpamtrap, got.SpamtrapScore, tt.trap)
		}
	}
}

func TestSpamtrapHardBounceCountsOnCacheHits(t *testing.T) {
	t.Parallel()
	h := validation.NewHistory(false)
	f := setup(t, func(c *validation.Config) { c.Bounces = h; c.SpamtrapThreshold = 0.3 })
	const email = "Sales@acme-mail.com"
	as := func(account int64) validation.Result {
		t.Helper()
		r, err := f.v.ValidateAs(context.Background(), account, validation.ModeStandard, email)
		if err != nil {
			t.Fatal(err)
		}
		return r
	}
	before := as(1)
	h.Add(1, "sales@acme-mail.com") // history is kept in lower case
	after := as(1)
	if !after.Cached {
		t.Fatal("second validation not cached")
	}
	if after.SpamtrapScore <= before.SpamtrapScore || before.IsSpamtrap || !after.IsSpamtrap {
		t.Errorf("%q: score %v (trap %v) before the bounce, %v (trap %v) after, want a rise past 0.3",
			email, before.SpamtrapScore, before.IsSpamtrap, after.SpamtrapScore, after.IsSpamtrap)
	}
	// Another account's bounce is not the caller's business.
	if other := as(2); other.SpamtrapScore != before.SpamtrapScore || other.IsSpamtrap {
		t.Errorf("account 2 after account 1's bounce: score %v, want %v as before it", other.SpamtrapScore, before.SpamtrapScore)
	}
	if none := as(validation.NoAccount); none.SpamtrapScore != before.SpamtrapScore {
		t.Errorf("no account: score %v, want %v", none.SpamtrapScore, before.SpamtrapScore)
	}
	if all := as(validation.AllAccounts); all.SpamtrapScore != after.SpamtrapScore {
		t.Errorf("all accounts (the operator): score %v, want %v", all.SpamtrapScore, after.SpamtrapScore)
	}
	h.Add(2, "sales@acme-mail.com")
	if other := as(2); other.SpamtrapScore != after.SpamtrapScore {
		t.Errorf("account 2 after its own bounce: score %v, want %v", other.SpamtrapScore, after.SpamtrapScore)
	}
	if as(1).SpamtrapScore != after.SpamtrapScore {
		t.Error("account 1 lost its bounce when account 2 bounced too")
	}
}

func TestSpamtrapSharedHistory(t *testing.T) {
	t.Parallel()
	h := validation.NewHistory(true)
	f := setup(t, func(c *validation.Config) { c.Bounces = h; c.SpamtrapThreshold = 0.3 })
	h.Add(1, "sales@acme-mail.com")
	r, err := f.v.ValidateAs(context.Background(), 2, validation.ModeStandard, "sales@acme-mail.com")
	if err != nil {
		t.Fatal(err)
	}
	if !r.IsSpamtrap {
		t.Errorf("shared history: account 1's bounce does not count for account 2 (score %v)", r.SpamtrapScore)
	}
	if err := h.Replace(func(func(int64, string)) error { return nil }); err != nil || h.Len() != 0 {
		t.Fatalf("Replace with nothing: %v, %d left", err, h.Len())
	}
}
