package validation_test

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/postline/postline/internal/validation"
)

func TestUnknownMode(t *testing.T) {
	t.Parallel()
	f := setup(t)
	if _, err := f.v.Validate(t.Context(), "lenient", "a@acme-mail.com"); err == nil {
		t.Error(`Validate(mode "lenient") = nil error`)
	}
}

func TestNewRejectsBadConfig(t *testing.T) {
	t.Parallel()
	f := setup(t)
	tests := []struct {
		name string
		cfg  validation.Config
	}{
		{"no resolver", validation.Config{}},
		{"negative TTL", validation.Config{Resolver: f.cfg.Resolver, CacheTTL: -time.Second}},
		{"threshold > 1", validation.Config{Resolver: f.cfg.Resolver, SpamtrapThreshold: 1.5}},
		{"negative concurrency", validation.Config{Resolver: f.cfg.Resolver, Concurrency: -1}},
	}
	for _, tt := range tests {
		if _, err := validation.New(tt.cfg); err == nil {
			t.Errorf("%s: New succeeded", tt.name)
		}
	}
}

func TestResultJSON(t *testing.T) {
	t.Parallel()
	f := setup(t)
	tests := []struct{ email, want string }{
		{"jane@acme-mail.com", `{"email":"jane@acme-mail.com","is_valid":true,"error":null,"warnings":[],"cached":false,"is_spamtrap":false,"spamtrap_score":0.018,"deliverability":"deliverable","deliverability_reasons":[],"validated_at":"2026-03-04T05:06:07.891Z"}`},
		{"jane@gmail.con", `{"email":"jane@gmail.con","is_valid":false,"error":"domain does not exist: gmail.con","warnings":[],"cached":false,"is_spamtrap":false,"spamtrap_score":0.1824,"reason":"nxdomain","suggestion":"jane@gmail.com","deliverability":"undeliverable","deliverability_reasons":["domain_not_found"],"validated_at":"2026-03-04T05:06:07.891Z"}`},
	}
	for _, tt := range tests {
		b, err := json.Marshal(f.validate(t, validation.ModeStandard, tt.email))
		if err != nil {
			t.Fatal(err)
		}
		if string(b) != tt.want {
			t.Errorf("%q:\n got %s\nwant %s", tt.email, b, tt.want)
		}
	}
}
