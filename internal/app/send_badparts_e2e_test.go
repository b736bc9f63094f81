package app_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/postline/postline/internal/event"
	"github.com/postline/postline/internal/store"
)

// TestBadPartsAre422: a part that cannot be read, an unknown field, and a
// control character in a password, a name or a header value are each a
// 422 naming the field; nothing is queued or logged.
func TestBadPartsAre422(t *testing.T) {
	t.Parallel()
	e := startSend(t, store.SQLite, false, nil)
	invoice := part{name: "attachments", filename: "invoice.pdf", contentType: "text/plain", value: "total: 42"}
	cases := []struct {
		name  string
		extra []part
		field string
	}{
		{"unparsable Content-Disposition", []part{invoice, {disposition: `form-data; name="attachments"; filename="inv`, value: "x"}}, "body.parts.5"},
		{"no disposition name", []part{{disposition: `attachment; filename="a.txt"`, value: "x"}}, "body.parts.4"},
		{"unknown field", []part{{name: "too", value: "bob@rcpt.example.net"}}, "too"},
		{"tab in the ZIP password", []part{invoice, {name: "attachment_options", value: `{"password":"correct\thorse"}`}}, "attachment_options.password"},
		{"CR in a file name", []part{{disposition: `form-data; name="attachments"; filename*=UTF-8''a%0Db.txt`, value: "x"}}, "attachments.0"},
		{"LF in from_name", []part{{name: "from_name", value: "Shop\nBcc: x@evil.example"}}, "from_name"},
		{"CR in a header value", []part{{name: "headers", value: `{"X-Ref":"a\rb"}`}}, "headers.X-Ref"},
		{"control character in tags", []part{{name: "tags", value: "a\x07b"}}, "tags"},
	}
	for _, c := range cases {
		resp := e.send(t, append(basicParts("ann@rcpt.example.net"), c.extra...), nil)
		errs, _ := resp.JSON["errors"].(map[string]any)
		if resp.StatusCode != 422 || errs[c.field] == nil {
			t.Errorf("%s: %d %s, want 422 naming %s", c.name, resp.StatusCode, resp.Body, c.field)
		}
	}
	time.Sleep(200 * time.Millisecond)
	pg, err := e.App.Events.List(context.Background(), event.Filter{DomainID: e.dom.ID, Limit: 100})
	if err != nil {
		t.Fatal(err)
	}
	if len(pg.Entries) != 0 || len(e.sink.Messages()) != 0 {
		t.Fatalf("refused requests left %d log entries and %d messages", len(pg.Entries), len(e.sink.Messages()))
	}
	if resp := e.send(t, append(basicParts("ann@rcpt.example.net"), invoice), nil); resp.StatusCode != 202 ||
		!strings.Contains(string(resp.Body), "with 1 attachment(s)") {
		t.Fatalf("the same request without the bad part: %d %s", resp.StatusCode, resp.Body)
	}
}
