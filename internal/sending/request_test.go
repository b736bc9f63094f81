package sending

import (
	"runtime"
	"strings"
	"testing"

	"github.com/postline/postline/internal/apperr"
)

// What intake accepts can be built, and stored on PostgreSQL: the fields
// the message build or the database would refuse are 422s naming them.
func TestValidateRefusesWhatCannotBeBuiltOrStored(t *testing.T) {
	t.Parallel()
	ok := Request{From: "a@shop.example", To: []string{"b@rcpt.example"}, Subject: "Hi", Text: "t"}
	if _, err := validate(ok, "shop.example", Limits{}.withDefaults()); err != nil {
		t.Fatalf("a plain request: %v", err)
	}
	for _, c := range []struct {
		edit  func(*Request)
		field string
		says  string
	}{
		{func(r *Request) { r.Subject = "a\x01b" }, "subject", "control characters"},
		{func(r *Request) { r.Subject = "a\x00b" }, "subject", "control characters"},
		{func(r *Request) { r.Subject = "bad \xff utf8" }, "subject", "UTF-8"},
		{func(r *Request) { r.Subject = "two\nlines" }, "subject", "line breaks"},
		{func(r *Request) { r.Subject = strings.Repeat("x", 990) }, "subject", "998"},
		{func(r *Request) { r.FromName = "Shop\x01" }, "from_name", "control characters"},
		{func(r *Request) { r.FromName = "Shop\r\nBcc: x@evil.example" }, "from_name", "line breaks"},
		{func(r *Request) { r.Text = "nul \x00 here" }, "text", "NUL"},
		{func(r *Request) { r.HTML = "<p>\xc3</p>" }, "html", "UTF-8"},
		{func(r *Request) { r.Tags = "t\xc3" }, "tags", "UTF-8"},
		{func(r *Request) { r.Headers = `{"X-A":"a\u0001b"}` }, "headers.X-A", "control characters"},
		{func(r *Request) { r.Headers = `{"X-A":"` + strings.Repeat("y", 995) + `"}` }, "headers.X-A", "too long"},
		{func(r *Request) {
			r.Attachments = []Attachment{{Filename: "a.txt", ContentType: "text/" + strings.Repeat("x", 300), Data: []byte("x")}}
		}, "attachments.0", "255"},
		{func(r *Request) {
			r.Attachments = []Attachment{{Filename: "a.txt", ContentType: "text/plain\xff", Data: []byte("x")}}
		}, "attachments.0", "printable"},
		{func(r *Request) {
			r.Attachments = []Attachment{{Filename: "a\xff.txt", ContentType: "text/plain", Data: []byte("x")}}
		},
			"attachments.0", "UTF-8"},
	} {
		r := ok
		c.edit(&r)
		_, err := validate(r, "shop.example", Limits{}.withDefaults())
		var ae *apperr.Error
		msgs := ""
		if e, isApp := err.(*apperr.Error); isApp {
			ae = e
			msgs = strings.Join(ae.Fields[c.field], " ")
		}
		if ae == nil || !strings.Contains(msgs, c.says) {
			t.Errorf("%s: %v (field messages %q), want one naming %s with %q", c.field, err, msgs, c.field, c.says)
		}
	}
}

// The messages name the field once, without the build's own prefixes.
func TestValidateMessagesReadWell(t *testing.T) {
	t.Parallel()
	r := Request{From: "a@shop.example", To: []string{"b@rcpt.example"}, Subject: "a\x01b", Text: "t",
		Headers: `{"X-A":"` + strings.Repeat("y", 995) + `"}`}
	_, err := validate(r, "shop.example", Limits{}.withDefaults())
	ae, _ := apperr.As(err)
	if ae == nil || strings.Join(ae.Fields["subject"], "|") != "The subject must not contain control characters" ||
		strings.Count(strings.Join(ae.Fields["headers.X-A"], "|"), "too long") != 1 {
		t.Errorf("messages: %+v", ae)
	}
}

// A request of a million recipients is refused without building a list
// of a million strings.
func TestRecipientsStopAtTheLimit(t *testing.T) { // not parallel: it measures allocation
	to := []string{strings.Repeat("a,", 1_000_000)}
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	fe := apperr.FieldErrors{}
	if got, _ := allRecipients(fe, Request{To: to}, 1000); got != nil || len(fe["to"]) != 1 || !strings.Contains(fe["to"][0], "1000") {
		t.Fatalf("recipients = %d, errors %v", len(got), fe)
	}
	runtime.ReadMemStats(&after)
	if grew := after.TotalAlloc - before.TotalAlloc; grew > 1<<20 {
		t.Errorf("refusing allocated %d KiB", grew>>10)
	}
}
