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
