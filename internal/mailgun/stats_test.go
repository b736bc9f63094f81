package mailgun_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/postline/postline/internal/event"
	"github.com/postline/postline/internal/mailgun"
)

// Each entry the events API shows adds to one stat counter of its event
// (the same name and severity), and no other entry adds to any.
func TestStatKey(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		typ     event.Type
		details string
		want    string
	}{
		{event.Queued, `{}`, mailgun.StatAccepted},
		{event.Send, `{}`, ""},
		{event.Deferred, `{}`, ""},
		{event.Delivered, `{}`, mailgun.StatDelivered},
		{event.TemporaryFail, `{}`, mailgun.StatTemporaryESPBlock},
		{event.TemporaryFail, `{"source":"dsn","reason":"delayed"}`, mailgun.StatTemporaryESPBlock},
		{event.PermanentFail, `{"stage":"rcpt"}`, mailgun.StatPermanentBounce},
		{event.Bounced, `{"stage":"rcpt"}`, ""},
		{event.Bounced, `{"source":"dsn"}`, mailgun.StatPermanentDelayedBounce},
		{event.Failed, `{"reason":"permanent_failure"}`, ""},
		{event.Failed, `{"reason":"suppressed","suppression":"bounce"}`, mailgun.StatPermanentSuppressBounce},
		{event.Failed, `{"reason":"suppressed","suppression":"unsubscribe"}`, mailgun.StatPermanentSuppressUnsub},
		{event.Failed, `{"reason":"max_age_exceeded"}`, mailgun.StatPermanentOther},
		{event.Failed, `{"reason":"cancelled"}`, mailgun.StatPermanentOther},
		{event.Opened, `{"first":true}`, mailgun.StatOpenedUnique},
		{event.Opened, `{"first":false,"bot":"scanner"}`, mailgun.StatOpenedRepeat},
		{event.Clicked, `{"first":true}`, mailgun.StatClickedUnique},
		{event.Clicked, `{}`, mailgun.StatClickedRepeat},
		{event.Unsubscribed, `{"source":"link"}`, mailgun.StatUnsubscribed},
		{event.Unsubscribed, `{"source":"complaint"}`, mailgun.StatComplained},
	} {
		en := event.Entry{Type: c.typ, Details: []byte(c.details)}
		got := mailgun.StatKey(en)
		if got != c.want {
			t.Errorf("StatKey(%s %s) = %q; want %q", c.typ, c.details, got, c.want)
		}
		name, severity := mailgun.EventName(en)
		if (got == "") != (name == "") || !strings.HasPrefix(got, name) ||
			(severity != "" && !strings.HasPrefix(got, name+"."+severity+".")) {
			t.Errorf("StatKey(%s %s) = %q, but the events API shows %q %q", c.typ, c.details, got, name, severity)
		}
	}
}

// A bucket has only the events asked for, in Mailgun's shape, totals the
// sums of their counters.
func TestStatBucket(t *testing.T) {
	t.Parallel()
	counts := map[string]int64{mailgun.StatAccepted: 5, mailgun.StatDelivered: 4, mailgun.StatPermanentBounce: 1,
		mailgun.StatPermanentOther: 2, mailgun.StatPermanentSuppressUnsub: 1, mailgun.StatTemporaryESPBlock: 3,
		mailgun.StatOpenedUnique: 2, mailgun.StatOpenedRepeat: 5, mailgun.StatComplained: 1}
	b, _ := json.Marshal(mailgun.StatBucket("Sat, 21 Nov 2026 00:00:00 UTC", counts, []string{"accepted", "failed", "opened", "stored"}))
	var got struct {
		Time     string
		Accepted struct{ Incoming, Outgoing, Total int64 }
		Failed   struct {
			Temporary struct{ Espblock, Total int64 }
			Permanent map[string]int64
		}
		Opened    struct{ Total, Unique int64 }
		Stored    *struct{ Total int64 }
		Delivered *struct{ Total int64 }
	}
	if err := json.Unmarshal(b, &got); err != nil {
		t.Fatal(err)
	}
	p := got.Failed.Permanent
	if got.Time != "Sat, 21 Nov 2026 00:00:00 UTC" || got.Accepted.Outgoing != 5 || got.Accepted.Total != 5 ||
		got.Failed.Temporary.Espblock != 3 || got.Failed.Temporary.Total != 3 ||
		p["bounce"] != 1 || p["suppress-unsubscribe"] != 1 || p["suppress-bounce"] != 0 || p["total"] != 4 ||
		got.Opened.Total != 7 || got.Opened.Unique != 2 || got.Stored == nil || got.Stored.Total != 0 || got.Delivered != nil {
		t.Errorf("StatBucket = %s", b)
	}
	for _, k := range []string{"suppress-bounce", "suppress-unsubscribe", "suppress-complaint", "bounce", "delayed-bounce", "total"} {
		if _, ok := p[k]; !ok {
			t.Errorf("failed.permanent has no %s: %s", k, b)
		}
	}
}
