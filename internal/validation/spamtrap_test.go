package validation_test

import (
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
	b := &bounces{}
	f := setup(t, func(c *validation.Config) { c.Bounces = b; c.SpamtrapThreshold = 0.3 })
	const email = "Sales@acme-mail.com"
	before := f.validate(t, validation.ModeStandard, email)
	b.add("sales@acme-mail.com") // lists are asked in lower case
	after := f.validate(t, validation.ModeStandard, email)
	if !after.Cached {
		t.Fatal("second validation not cached")
	}
	if after.SpamtrapScore <= before.SpamtrapScore || before.IsSpamtrap || !after.IsSpamtrap {
		t.Errorf("%q: score %v (trap %v) before the bounce, %v (trap %v) after, want a rise past 0.3",
			email, before.SpamtrapScore, before.IsSpamtrap, after.SpamtrapScore, after.IsSpamtrap)
	}
}
