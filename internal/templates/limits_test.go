package templates

import (
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/postline/postline/internal/apperr"
)

// refusal returns the message err gives for field, failing the test when
// err is not a 422 naming it.
func refusal(t *testing.T, err error, field string) string {
	t.Helper()
	e, ok := apperr.As(err)
	if !ok || e.Code != apperr.Invalid || len(e.Fields[field]) == 0 {
		t.Fatalf("got %v, want an invalid error naming %s", err, field)
	}
	return e.Fields[field][0]
}

// The two attacks of issue 28 at sizes that took seconds before the scan
// (raymond's parser is quadratic in a path's length, its evaluator in the
// nesting): both are refused at once, naming the limit.
func TestCompileRefusesCostlyTemplatesQuickly(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		name, text, want string
	}{
		{"a 240 KB path of ../", "{{" + strings.Repeat("../", 80_000) + "a}}", "more than 32 segments"},
		{"20,000 nested with", strings.Repeat("{{#with this}}", 20_000) + "{{a}}" + strings.Repeat("{{/with}}", 20_000), "more than 100 deep"},
		{"a 10,000-long else-if chain", "{{#if a}}" + strings.Repeat("{{else if a}}x", 10_000) + "{{/if}}", "more than 100 deep"},
		{"20,000 nested subexpressions", "{{a " + strings.Repeat("(b ", 20_000) + "c" + strings.Repeat(")", 20_000) + "}}", "more than 100 deep"},
		{"a part past 512 KiB", strings.Repeat("x", MaxPartBytes+1), "at most 524288 bytes"},
	} {
		start := time.Now()
		_, err := Compile("s", "", c.text, false)
		if msg := refusal(t, err, "text"); !strings.Contains(msg, c.want) {
			t.Errorf("%s: %q, want it to say %q", c.name, msg, c.want)
		}
		// Milliseconds here; the bound leaves room for -race and a busy
		// machine, and the path alone took 18 s before.
		if d := time.Since(start); d > 8*time.Second {
			t.Errorf("%s: refused after %s", c.name, d)
		}
	}
}

func TestCompileLimitsAreInclusive(t *testing.T) {
	t.Parallel()
	path := "{{" + strings.Repeat("a.", MaxPathSegments-1) + "a}}"
	nested := strings.Repeat("{{#if a}}", MaxDepth) + "x" + strings.Repeat("{{/if}}", MaxDepth)
	siblings := strings.Repeat("{{#if a}}{{#each b}}{{c.d}}{{/each}}{{else}}-{{/if}}", 1000)
	for _, src := range []string{path, nested, siblings, "{{#if a}}{{else if b}}{{else}}{{/if}}", "{{{{raw}}}}{{/if}}{{{{/raw}}}}"} {
		if _, err := Compile("s", "", src, false); err != nil {
			t.Errorf("%.60q: %v", src, err)
		}
	}
	// "x{{a}}" is four tokens: the text, {{, a and }}.
	if _, err := Compile("s", strings.Repeat("x{{a}}", MaxTokens/4), "t", false); err != nil {
		t.Errorf("%d tokens: %v", MaxTokens, err)
	}
	for src, want := range map[string]string{
		strings.Repeat("x{{a}}", MaxTokens/4) + "y":                                     "more than 50000 Handlebars tokens",
		"{{" + strings.Repeat("a.", MaxPathSegments) + "a}}":                            "segments",
		"{{" + strings.Repeat("../", MaxPathSegments) + "a}}":                           "segments",
		strings.Repeat("{{#if a}}", MaxDepth+1) + strings.Repeat("{{/if}}", MaxDepth+1): "deep",
	} {
		_, err := Compile("s", src, "t", false)
		if msg := refusal(t, err, "html"); !strings.Contains(msg, want) {
			t.Errorf("%.60q: %q, want %q", src, msg, want)
		}
	}
}

// raymond's parser, failing before the end of its input, leaves its lexer
// goroutine blocked for good; block tokens out of place are refused before
// it runs, so such templates leak nothing.
func TestCompileMisplacedBlocksLeakNoGoroutine(t *testing.T) {
	body := strings.Repeat("{{a}} ", 1000)
	before := runtime.NumGoroutine()
	for range 20 {
		for _, src := range []string{"{{/if}}" + body, "{{else}}" + body, "{{a)}}" + body, "{{a (b}}" + body} {
			if _, err := Compile("s", "", src, false); err == nil {
				t.Fatalf("%.20q compiled", src)
			}
		}
	}
	time.Sleep(50 * time.Millisecond) // lexers that finished let their goroutines end
	if grown := runtime.NumGoroutine() - before; grown > 20 {
		t.Errorf("%d goroutines more after 80 refused templates", grown)
	}
}

// A loop whose body does nothing visible 100,000 times over (no output to
// bound, within the iteration limit) stops at the render's deadline with a
// 422 naming the template, instead of running for minutes.
func TestRenderStopsAtItsDeadline(t *testing.T) {
	t.Parallel()
	c, err := Compile("s", "", "{{#each list}}"+strings.Repeat("{{#if x}}{{/if}}", 5000)+"{{/each}}", false)
	if err != nil {
		t.Fatal(err)
	}
	c.Name, c.timeout = "heavy (version 1)", 100*time.Millisecond
	list := make([]any, maxIterations)
	start := time.Now()
	_, err = c.Render(map[string]any{"list": list})
	if msg := refusal(t, err, "template"); !strings.Contains(msg, "heavy (version 1) took longer than 100ms") {
		t.Errorf("message %q", msg)
	}
	if d := time.Since(start); d > time.Second {
		t.Errorf("stopped after %s", d)
	}
	c.Name = ""
	if _, err = c.Render(map[string]any{"list": list}); !strings.Contains(refusal(t, err, "variables"), "took longer than") {
		t.Errorf("inline: %v", err)
	}
}

// A 500 KB part of {{a}} parses to ~25 MB, and the compiled templates kept
// were bounded in number alone (2,000): ten such versions created through
// the API kept 860 MB. What is kept is bounded by an estimate of the
// memory each holds (64 MiB of estimate); a part of more tokens than these
// is refused first.
func TestCompiledTemplatesKeptAreBounded(t *testing.T) {
	s := NewService(nil, nil)
	src := strings.Repeat("{{a}}", MaxTokens/3)
	runtime.GC()
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	for i := range 14 { // ~8 MiB each: 112 MiB kept without the bound
		// Distinct sources, as distinct versions have.
		part := src + strings.Repeat(" ", i)
		c, err := Compile("s", part, part, false)
		if err != nil {
			t.Fatal(err)
		}
		s.keep(Template{ID: int64(i + 1), Name: "big", Subject: "s", HTML: part, Text: part}, c)
	}
	runtime.GC()
	runtime.ReadMemStats(&after)
	if kept := int64(after.HeapAlloc) - int64(before.HeapAlloc); kept > 64<<20 {
		t.Errorf("14 compiled templates of %d tokens a part keep %d MiB; want at most 64 MiB", MaxTokens/3*3, kept>>20)
	}
	runtime.KeepAlive(s)
}
