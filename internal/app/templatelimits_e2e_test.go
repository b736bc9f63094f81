package app_test

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/postline/postline/internal/apitest"
	"github.com/postline/postline/internal/store"
)

// TestTemplateAttacksRefused: issue 28's two template attacks, at sizes
// that took seconds each (a 240 KB path of ../ to create, 20,000 nested
// #with to render), are refused at once with a 422 naming the limit,
// stored or inline; a stored template whose loop would run for minutes is
// stopped at the 2 s render deadline with a 422 naming it.
func TestTemplateAttacksRefused(t *testing.T) {
	t.Parallel()
	forEachDialect(t, func(t *testing.T, d store.Dialect) {
		e := startSend(t, d, false, nil)
		base := "/api/domains/shop.example.com/templates"
		attacks := map[string]string{
			"more than 32 segments": "{{" + strings.Repeat("../", 80_000) + "name}}",
			"more than 100 deep":    strings.Repeat("{{#with this}}", 20_000) + "{{name}}" + strings.Repeat("{{/with}}", 20_000),
		}
		for want, text := range attacks {
			start := time.Now()
			resp := e.Do(apitest.Request{Method: "POST", Path: base, Auth: e.user.Auth(),
				Body: map[string]any{"name": "attack", "subject": "s", "text": text}})
			errs, _ := resp.JSON["errors"].(map[string]any)
			if resp.StatusCode != 422 || !strings.Contains(fmt.Sprint(errs["text"]), want) {
				t.Errorf("create (%s): %d %.300s", want, resp.StatusCode, resp.Body)
			}
			resp = e.send(t, []part{{name: "from", value: "orders@shop.example.com"}, {name: "to", value: "ann@rcpt.example.net"},
				{name: "subject", value: "s"}, {name: "text", value: "t"}, {name: "html", value: text}, {name: "variables", value: `{"name": "Ann"}`}}, nil)
			errs, _ = resp.JSON["errors"].(map[string]any)
			if resp.StatusCode != 422 || !strings.Contains(fmt.Sprint(errs["html"]), want) {
				t.Errorf("inline send (%s): %d %.300s", want, resp.StatusCode, resp.Body)
			}
			if took := time.Since(start); took > 8*time.Second { // a fraction of a second; 18 s to create the path alone before
				t.Errorf("%s: refused after %s", want, took)
			}
		}

		// 100,000 iterations of 5,000 silent #if each: within every size
		// and loop limit, minutes of work without the deadline.
		resp := e.Do(apitest.Request{Method: "POST", Path: base, Auth: e.user.Auth(), Body: map[string]any{"name": "heavy", "subject": "s",
			"text": "{{#each list}}" + strings.Repeat("{{#if x}}{{/if}}", 5000) + "{{/each}}"}})
		if resp.StatusCode != 201 {
			t.Fatalf("create heavy: %d %s", resp.StatusCode, resp.Body)
		}
		start := time.Now()
		resp = e.Do(apitest.Request{Method: "POST", Path: base + "/heavy/render", Auth: e.user.Auth(),
			Body: map[string]any{"variables": map[string]any{"list": make([]int, 100_000)}}})
		errs, _ := resp.JSON["errors"].(map[string]any)
		if resp.StatusCode != 422 || !strings.Contains(fmt.Sprint(errs["template"]), "heavy (version 1) took longer than 2s") {
			t.Errorf("render heavy: %d %s", resp.StatusCode, resp.Body)
		}
		if took := time.Since(start); took > 6*time.Second {
			t.Errorf("render heavy answered after %s", took)
		}
	})
}
