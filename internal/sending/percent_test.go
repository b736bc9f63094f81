package sending

import (
	"testing"

	"github.com/postline/postline/internal/templates"
)

// Mailgun's batch syntax: recipient values in bodies and headers, unknown
// keys empty, unsubscribe aliases to Postline's placeholder, other Mailgun
// variables dropped from headers with their brackets and kept in bodies,
// and no header line break from a value.
func TestRenderPercent(t *testing.T) {
	t.Parallel()
	p := personal{percent: true,
		src: templates.Rendered{Subject: "Hi %recipient.name%%recipient.missing%", Text: "Bye: %tag_unsubscribe_url% %tag_unsubscribe_email%",
			HTML: `<a href="%mailing_list_unsubscribe_url%">x</a> %recipient.n%`},
		srcHeaders: map[string]string{"List-Unsubscribe": "<%recipient.url%>, <%tag_unsubscribe_email%>", "X-Id": "%recipient.name%",
			"X-Empty": "<%tag_unsubscribe_email%>"}}
	out, h := p.renderPercent(map[string]any{"name": "Ann\r\nBcc: x@evil.example", "url": "https://b.example/u?x=1", "n": 2.0})
	if out.Subject != "Hi Ann\r\nBcc: x@evil.example" { // the subject's own check refuses it at intake
		t.Errorf("subject %q", out.Subject)
	}
	if out.Text != "Bye: %unsubscribe_url% %tag_unsubscribe_email%" || out.HTML != `<a href="%unsubscribe_url%">x</a> 2` {
		t.Errorf("bodies %q %q", out.Text, out.HTML)
	}
	if h["List-Unsubscribe"] != "<https://b.example/u?x=1>" || h["X-Id"] != "Ann  Bcc: x@evil.example" {
		t.Errorf("headers %q", h)
	}
	if _, ok := h["X-Empty"]; ok {
		t.Errorf("a header left empty was kept: %q", h)
	}
}

// The user variables (X-Mailgun-Variables) are JSON: a recipient's value
// is substituted inside its strings and encoded again, so quotes and line
// breaks stay in one JSON string and numbers stay as sent.
func TestRenderPercentUserVariables(t *testing.T) {
	t.Parallel()
	p := personal{percent: true, srcHeaders: map[string]string{
		"X-Mailgun-Variables": `{"id":"42","big":12345678901234567890,"who":"Dear %recipient.name%","l":[1,"%recipient.n%"],"x":"%tag_x%"}`}}
	_, h := p.renderPercent(map[string]any{"name": "Ann \"A\"\r\nB", "n": 2.0})
	want := `{"big":12345678901234567890,"id":"42","l":[1,"2"],"who":"Dear Ann \"A\"\r\nB","x":"%tag_x%"}`
	if got := h["X-Mailgun-Variables"]; got != want {
		t.Errorf("X-Mailgun-Variables\n got %s\nwant %s", got, want)
	}
}
