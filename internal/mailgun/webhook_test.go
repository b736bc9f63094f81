package mailgun_test

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"testing"
	"time"

	"github.com/postline/postline/internal/event"
	"github.com/postline/postline/internal/mailgun"
)

// Each log entry goes to at most one webhook id, so an event reaches a
// URL set for several ids once.
func TestWebhookID(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		typ     event.Type
		details string
		want    string
	}{
		{event.Queued, `{}`, "accepted"},
		{event.Send, `{}`, ""},
		{event.Deferred, `{}`, ""},
		{event.Delivered, `{}`, "delivered"},
		{event.TemporaryFail, `{}`, "temporary_fail"},
		{event.PermanentFail, `{}`, "permanent_fail"},
		{event.Bounced, `{}`, "permanent_fail"},              // a DSN
		{event.Bounced, `{"stage":"rcpt"}`, ""},              // the worker's, after its permanent_fail
		{event.Failed, `{"reason":"permanent_failure"}`, ""}, // repeats permanent_fail
		{event.Failed, `{"reason":"suppressed"}`, "permanent_fail"},
		{event.Opened, `{}`, "opened"},
		{event.Clicked, `{}`, "clicked"},
		{event.Unsubscribed, `{}`, "unsubscribed"},
		{event.Unsubscribed, `{"source":"complaint"}`, "complained"},
	} {
		got := mailgun.WebhookID(event.Entry{Type: c.typ, Details: []byte(c.details)})
		if got != c.want {
			t.Errorf("WebhookID(%s %s) = %q; want %q", c.typ, c.details, got, c.want)
		}
		if got != "" && !mailgun.ValidWebhookID(got) {
			t.Errorf("WebhookID(%s) = %q, not one of WebhookIDs", c.typ, got)
		}
	}
}

// The signature is Mailgun's: hex HMAC-SHA256 of timestamp+token.
func TestSign(t *testing.T) {
	t.Parallel()
	at := time.Unix(1764211200, 0)
	a, b := mailgun.Sign("key-1", at), mailgun.Sign("key-1", at)
	m := hmac.New(sha256.New, []byte("key-1"))
	m.Write([]byte(a.Timestamp + a.Token))
	if a.Timestamp != "1764211200" || len(a.Token) != 50 || a.Signature != hex.EncodeToString(m.Sum(nil)) || a.Token == b.Token {
		t.Errorf("Sign = %+v (then %+v); want the Unix time, a fresh 50-digit token and the HMAC of both", a, b)
	}
}

// delivery-status says whether the session had TLS and a verified
// certificate, from details.tls.
func TestItemTLS(t *testing.T) {
	t.Parallel()
	for details, want := range map[string][2]any{
		`{"smtp_code":250,"tls":{"version":"TLS1.3","verified":true}}`:  {true, true},
		`{"smtp_code":250,"tls":{"version":"TLS1.2","verified":false}}`: {true, false},
		`{"smtp_code":250,"tls":{"version":null,"verified":false}}`:     {false, false},
	} {
		ds := mailgun.Item(event.Entry{Type: event.Delivered, Details: []byte(details)}, nil)["delivery-status"].(map[string]any)
		if ds["tls"] != want[0] || ds["certificate-verified"] != want[1] {
			t.Errorf("%s: tls %v, certificate-verified %v; want %v", details, ds["tls"], ds["certificate-verified"], want)
		}
	}
}
