package sending

import (
	"testing"

	"github.com/postline/postline/internal/domain"
	"github.com/postline/postline/internal/message"
)

// TestSharedCopyBlocker: one case per reason a send's copies differ
// between recipients, each next to the same send without it, which may
// share a transaction.
func TestSharedCopyBlocker(t *testing.T) {
	t.Parallel()
	raw := Send{Raw: []byte("From: a@shop.example\r\nSubject: hi\r\n\r\nhello\r\n")}
	cc := Send{Text: "hello", Addressing: Addressing{To: []message.Mailbox{{Addr: "ann@x.example"}},
		Cc: []message.Mailbox{{Addr: "bob@x.example"}}}}
	plain := domain.Domain{Name: "shop.example"}
	withAuth := domain.Domain{Name: "shop.example", AuthDomain: "mail.shop.example"}
	opens := domain.Domain{Name: "shop.example", Tracking: domain.Tracking{Opens: true}}
	clicks := domain.Domain{Name: "shop.example", Tracking: domain.Tracking{Clicks: true}}
	unsub := domain.Domain{Name: "shop.example", Tracking: domain.Tracking{Unsubscribe: true}}
	forward := Send{Raw: raw.Raw, Headers: map[string]string{forwardHeader: "1"}}
	trackedByHeader := Send{Raw: raw.Raw, Headers: map[string]string{trackHeader: "opens"}}
	untrackedByHeader := Send{Raw: raw.Raw, Headers: map[string]string{trackHeader: ""}}
	cases := []struct {
		name           string
		snd            Send
		dom            domain.Domain
		tracking, verp bool
		want           string
	}{
		{"raw, no tracking, no VERP", raw, plain, true, true, ""},
		{"built with visible To and Cc", cc, plain, true, true, ""},
		{"VERP under an authentication domain", raw, withAuth, false, true, blockVERP},
		{"authentication domain without a VERP key", raw, withAuth, false, false, ""},
		{"VERP for a forward", forward, plain, false, true, blockVERP},
		{"open tracking", raw, opens, true, false, blockTracking},
		{"click tracking", raw, clicks, true, false, blockTracking},
		{"unsubscribe tracking", cc, unsub, true, false, blockTracking},
		{"the domain tracks but the worker has no tracking URLs", raw, opens, false, false, ""},
		{"the message's own tracking switch on", trackedByHeader, plain, true, false, blockTracking},
		{"the message's own tracking switch off", untrackedByHeader, opens, true, false, ""},
		{"built without Cc: To is the recipient's own", Send{Text: "hello"}, plain, false, false, blockTo},
		{"built with display names only", Send{Text: "hello", Addressing: Addressing{To: []message.Mailbox{{Name: "Ann", Addr: "ann@x.example"}}}},
			plain, false, false, blockTo},
	}
	for _, c := range cases {
		if got := sharedCopyBlocker(c.snd, c.dom, c.tracking, c.verp); got != c.want {
			t.Errorf("%s: sharedCopyBlocker = %q, want %q", c.name, got, c.want)
		}
	}
}
