package hostile

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"mime/multipart"
	"strings"
	"testing"
	"time"
)

// TestBatchAmplification (finding 4): a ~727 KB request (a template that
// prints a 690 KB variable twice, to 1,000 recipients) would render 1.4 GB.
// It is refused with 413 naming --max-rendered-bytes-per-request before
// anything is queued, quickly and within the memory bound.
func TestBatchAmplification(t *testing.T) {
	t.Parallel()
	r := newRig(t, nil)
	r.start()
	tpl := map[string]any{"name": "twice", "subject": "hello", "text": "{{big}}{{big}}"}
	if code, body, err := r.api(attacker, "POST", "/api/domains/"+attackerDomin+"/templates", "application/json", jsonBody(tpl)); err != nil || code != 201 && code != 200 {
		t.Fatalf("create template: %d %s %v", code, body, err)
	}
	recipients := scale(1000, 1000)
	var code int
	var body []byte
	var took time.Duration
	r.underAttack(bounds{MaxRSSMiB: 400}, func(ctx context.Context) {
		var buf bytes.Buffer
		mw := multipart.NewWriter(&buf)
		mw.WriteField("from", "x@"+attackerDomin)
		mw.WriteField("template", "twice")
		vars, _ := json.Marshal(map[string]string{"big": strings.Repeat("A", 690<<10)})
		mw.WriteField("variables", string(vars))
		per := map[string]any{}
		for i := 0; i < recipients; i++ {
			to := fmt.Sprintf("r%d@%s", i, rcptDomain)
			mw.WriteField("to", to)
			per[to] = map[string]string{}
		}
		rv, _ := json.Marshal(per)
		mw.WriteField("recipient_variables", string(rv))
		mw.Close()
		start := time.Now()
		var err error
		code, body, err = r.api(attacker, "POST", "/api/domains/"+attackerDomin+"/message", mw.FormDataContentType(), &buf)
		took = time.Since(start)
		if err != nil {
			t.Errorf("send: %v", err)
		}
	})
	t.Logf("answer after %v: %d %s", took, code, body)
	if code != 413 || !strings.Contains(string(body), "max-rendered-bytes-per-request") {
		t.Errorf("amplifying batch: %d %s; want 413 naming --max-rendered-bytes-per-request", code, body)
	}
	for _, m := range r.sink.Messages() {
		if bytes.Contains(m.Data, []byte(attackerDomin)) {
			t.Fatalf("a message of the refused batch was delivered")
		}
	}
}

// TestTemplateBombs (finding 10): a template of 80,000 `../` path
// segments and one of 20,000 nested {{#with}} blocks are refused at once
// with 422 naming the limit, and neither stalls the server.
func TestTemplateBombs(t *testing.T) {
	t.Parallel()
	r := newRig(t, nil)
	r.start()
	bombs := map[string]string{
		"paths":   "{{" + strings.Repeat("../", 80000) + "x}}",
		"nesting": strings.Repeat("{{#with a}}", 20000) + "x" + strings.Repeat("{{/with}}", 20000),
	}
	r.underAttack(bounds{MaxRSSMiB: 300}, func(ctx context.Context) {
		for name, text := range bombs {
			start := time.Now()
			tpl := map[string]any{"name": name, "subject": "s", "text": text}
			code, body, err := r.api(attacker, "POST", "/api/domains/"+attackerDomin+"/templates", "application/json", jsonBody(tpl))
			if err != nil || code != 422 {
				t.Errorf("template %s: %d %s %v; want 422", name, code, body, err)
			}
			if d := time.Since(start); d > 2*time.Second {
				t.Errorf("template %s took %v to refuse, want under 2s", name, d)
			}
			// The same as an inline template of a send.
			var buf bytes.Buffer
			mw := multipart.NewWriter(&buf)
			mw.WriteField("from", "x@"+attackerDomin)
			mw.WriteField("to", "y@"+rcptDomain)
			mw.WriteField("subject", "s")
			mw.WriteField("text", text)
			mw.WriteField("variables", `{"a":{"a":{}}}`)
			mw.Close()
			start = time.Now()
			code, body, err = r.api(attacker, "POST", "/api/domains/"+attackerDomin+"/message", mw.FormDataContentType(), &buf)
			if err != nil || code != 422 {
				t.Errorf("inline template %s: %d %s %v; want 422", name, code, body, err)
			}
			if d := time.Since(start); d > 2*time.Second {
				t.Errorf("inline template %s took %v to refuse, want under 2s", name, d)
			}
		}
	})
}
