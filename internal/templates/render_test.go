package templates

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/postline/postline/internal/apperr"
)

func vars(t *testing.T, s string) map[string]any {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal([]byte(s), &m); err != nil {
		t.Fatal(err)
	}
	return m
}

func TestRenderEscapesOnlyTheHTMLPart(t *testing.T) {
	c, err := Compile("Hi {{name}}", `<p>{{name}} / {{{name}}}</p>`, "Hello {{name}}", false)
	if err != nil {
		t.Fatal(err)
	}
	out, err := c.Render(vars(t, `{"name": "<b>Tom & \"Jerry\"</b>\r\nBcc: x@evil.example"}`))
	if err != nil {
		t.Fatal(err)
	}
	if want := `<p>&lt;b&gt;Tom &amp; &quot;Jerry&quot;&lt;/b&gt;`; !strings.HasPrefix(out.HTML, want) {
		t.Errorf("html: %q, want it to start with %q", out.HTML, want)
	}
	if !strings.Contains(out.HTML, ` / <b>Tom & "Jerry"</b>`) {
		t.Errorf("{{{raw}}} escaped: %q", out.HTML)
	}
	if out.Text != "Hello <b>Tom & \"Jerry\"</b>\r\nBcc: x@evil.example" {
		t.Errorf("text: %q", out.Text)
	}
	if strings.ContainsAny(out.Subject, "\r\n") || out.Subject != `Hi <b>Tom & "Jerry"</b>  Bcc: x@evil.example` {
		t.Errorf("subject: %q", out.Subject)
	}
}

func TestRenderBlocks(t *testing.T) {
	c, err := Compile("", "", `{{#if vip}}VIP {{/if}}{{#unless vip}}guest {{/unless}}{{#each items}}{{@index}}:{{name}}x{{qty}}{{#if @last}}.{{else}}, {{/if}}{{else}}none{{/each}} {{#each totals}}{{@key}}={{this}};{{/each}} {{user.first}}`, false)
	if err != nil {
		t.Fatal(err)
	}
	out, err := c.Render(vars(t, `{"vip": true, "items": [{"name": "tea", "qty": 2}, {"name": "cup", "qty": 1}], "totals": {"b": 2, "a": 1}, "user": {"first": "Ann"}}`))
	if err != nil {
		t.Fatal(err)
	}
	if want := "VIP 0:teax2, 1:cupx1. a=1;b=2; Ann"; out.Text != want {
		t.Errorf("text: %q, want %q", out.Text, want)
	}
	out, _ = c.Render(vars(t, `{"items": []}`))
	if want := "guest none  "; out.Text != want {
		t.Errorf("empty: %q, want %q (missing variables render empty)", out.Text, want)
	}
}

func TestStrictNamesTheMissingVariable(t *testing.T) {
	c, err := Compile("Order {{order.id}}", "{{#if coupon}}Code {{coupon}}{{/if}}{{#each items}}{{sku}}{{/each}}", "", true)
	if err != nil {
		t.Fatal(err)
	}
	_, err = c.Render(vars(t, `{"items": []}`))
	if e, ok := apperr.As(err); !ok || e.Code != apperr.Invalid || !strings.Contains(err.Error(), `"order.id"`) {
		t.Fatalf("missing order.id: %v", err)
	}
	if _, err := c.Render(vars(t, `{"order": {"id": 7}}`)); err == nil || !strings.Contains(err.Error(), `"items"`) {
		t.Errorf("missing items: %v", err)
	}
	// coupon is tested by #if, sku belongs to each item: neither is required.
	if out, err := c.Render(vars(t, `{"order": {"id": 7}, "items": [{}]}`)); err != nil || out.Subject != "Order 7" {
		t.Errorf("with what is required: %+v %v", out, err)
	}
}

func TestRenderIsBounded(t *testing.T) {
	items := make([]int, 2000)
	v := map[string]any{}
	b, _ := json.Marshal(map[string]any{"a": items})
	json.Unmarshal(b, &v)
	c, err := Compile("", "", "{{#each a}}{{#each ../a}}{{#each ../../a}}x{{/each}}{{/each}}{{/each}}", false)
	if err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	_, err = c.Render(v)
	if err == nil || !strings.Contains(err.Error(), "loop iterations") {
		t.Fatalf("8e9 iterations: %v", err)
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Errorf("refusing took %s", d)
	}
	long := strings.Repeat("y", 1<<20)
	c, _ = Compile("", strings.Repeat("{{v}}", 20), "", false)
	if _, err := c.Render(map[string]any{"v": long}); err == nil || !strings.Contains(err.Error(), "could render more than") {
		t.Errorf("20 × 1 MiB escaped: %v", err)
	}
}

func TestCompileErrorsNameThePart(t *testing.T) {
	for _, c := range []struct{ subject, html, text, field string }{
		{"{{#if x}}", "", "", "subject"},
		{"", "{{> header}}", "", "html"},
		{"", "", "{{name", "text"},
	} {
		_, err := Compile(c.subject, c.html, c.text, false)
		e, ok := apperr.As(err)
		if !ok || e.Fields[c.field] == nil {
			t.Errorf("%+v: %v, want a 422 naming %s", c, err, c.field)
		}
	}
}
