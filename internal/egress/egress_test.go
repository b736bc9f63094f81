package egress_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/postline/postline/internal/egress"
)

const sample = `
[source."ip-1"]
source_address = "127.0.0.2"
ehlo_domain = "mta1.example.test"
warmup = ["50/day", "100/d", "500/day"]
warmup_start = "2025-03-01"

[source."ip-2"]
source_address = "127.0.0.3"

[pool."main"]
entries = [{name = "ip-1", weight = 1}, {name = "ip-2", weight = 3}]
`

func TestParse(t *testing.T) {
	t.Parallel()
	c, err := egress.Parse(sample)
	if err != nil {
		t.Fatal(err)
	}
	s := c.Sources["ip-1"]
	if s.Address.String() != "127.0.0.2" || s.EHLODomain != "mta1.example.test" {
		t.Errorf("ip-1 = %+v", s)
	}
	if got := c.Pools["main"].Entries; len(got) != 2 || got[1] != (egress.Entry{Source: "ip-2", Weight: 3}) {
		t.Errorf("main entries = %+v", got)
	}
	if !c.HasPool("main") || c.HasPool("other") {
		t.Error("HasPool is wrong")
	}
}

func TestParseErrors(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ text, want string }{
		{`[source.a]` + "\n" + `source_adress = "127.0.0.2"`, "unknown key source.a.source_adress"},
		{`[source.a]` + "\n" + `source_address = "mta.example"`, `source_address "mta.example" is not an IP address`},
		{`[pool.p]` + "\n" + `entries = [{name = "nope"}]`, `pool "p": entries[0]: no source named "nope"`},
		{`[source.a]` + "\n" + `[pool.p]` + "\n" + `entries = [{name = "a", weight = 0}]`, "weight 0 is not at least 1"},
		{`[pool.p]` + "\n" + `entries = []`, `pool "p" has no entries`},
		{`[source.a]` + "\n" + `warmup = ["50/day"]`, "warmup needs warmup_start"},
		{`[source.a]` + "\n" + `warmup = ["50/h"]` + "\n" + `warmup_start = "2025-01-01"`, `warmup[0] "50/h" is not a count a day`},
		{`[source.a]` + "\n" + `warmup = ["50/day"]` + "\n" + `warmup_start = "1 Jan"`, `warmup_start "1 Jan" is not a date`},
	} {
		_, err := egress.Parse(tc.text)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("Parse(%q) = %v, want an error with %q", tc.text, err, tc.want)
		}
	}
}

func TestWarmupCap(t *testing.T) {
	t.Parallel()
	c, err := egress.Parse(sample)
	if err != nil {
		t.Fatal(err)
	}
	w := c.Sources["ip-1"].Warmup
	for _, tc := range []struct {
		at      string
		n       int
		limited bool
	}{
		{"2025-02-28T23:59:59Z", 0, true}, // before the start: nothing
		{"2025-03-01T00:00:00Z", 50, true},
		{"2025-03-01T23:59:59Z", 50, true},
		{"2025-03-02T01:00:00+02:00", 50, true}, // still 1 March in UTC
		{"2025-03-02T12:00:00Z", 100, true},
		{"2025-03-03T12:00:00Z", 500, true},
		{"2025-03-04T00:00:00Z", 0, false}, // schedule over: unlimited
	} {
		at, _ := time.Parse(time.RFC3339, tc.at)
		n, limited := w.Cap(at)
		if n != tc.n || limited != tc.limited {
			t.Errorf("Cap(%s) = %d, %v; want %d, %v", tc.at, n, limited, tc.n, tc.limited)
		}
	}
	if n, limited := c.Sources["ip-2"].Warmup.Cap(time.Now()); limited {
		t.Errorf("ip-2 without warmup has a cap of %d", n)
	}
}

func TestPickerWeights(t *testing.T) {
	t.Parallel()
	p := egress.NewPicker([]egress.Entry{{Source: "a", Weight: 1}, {Source: "b", Weight: 3}})
	var seq strings.Builder
	counts := map[string]int{}
	for range 400 {
		s, _ := p.Next(nil)
		counts[s]++
		if seq.Len() < 8 {
			seq.WriteString(s)
		}
	}
	if counts["a"] != 100 || counts["b"] != 300 {
		t.Errorf("400 picks at 1:3 = %v", counts)
	}
	if got := seq.String(); got != "babbbabb" { // smooth: never a run of four b
		t.Errorf("first picks = %q, want babbbabb", got)
	}
	// a refused: b alone, then none at all.
	if s, ok := p.Next(func(s string) bool { return s == "b" }); !ok || s != "b" {
		t.Errorf("Next(only b) = %q, %v", s, ok)
	}
	if _, ok := p.Next(func(string) bool { return false }); ok {
		t.Error("Next(none) found a source")
	}
}

func TestCheckBind(t *testing.T) {
	t.Parallel()
	c, err := egress.Parse(sample)
	if err != nil {
		t.Fatal(err)
	}
	if err := c.CheckBind(); err != nil {
		t.Errorf("loopback sources: %v", err)
	}
	// 2001:db8::/32 is for documentation: never configured here, so it
	// cannot be bound (binding only, nothing is dialled).
	bad, err := egress.Parse(`[source."far"]` + "\n" + `source_address = "2001:db8::1"`)
	if err != nil {
		t.Fatal(err)
	}
	if err := bad.CheckBind(); err == nil || !strings.Contains(err.Error(), `source "far"`) || !strings.Contains(err.Error(), "2001:db8::1") {
		t.Errorf("CheckBind(2001:db8::1) = %v, want an error naming the source and its address", err)
	}
}

func TestLoad(t *testing.T) {
	t.Parallel()
	p := filepath.Join(t.TempDir(), "egress.toml")
	if err := os.WriteFile(p, []byte("[pool.x]\nentries = [{name=\"y\"}]\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := egress.Load(p); err == nil || !strings.Contains(err.Error(), p) {
		t.Errorf("Load(bad file) = %v, want an error naming the file", err)
	}
}

// A pick taken back leaves the round as it was: the next pick is the
// same source, and picks that are kept keep the weights' proportions
// however many others are taken back.
func TestPickerUndo(t *testing.T) {
	t.Parallel()
	p := egress.NewPicker([]egress.Entry{{Source: "a", Weight: 1}, {Source: "b", Weight: 2}, {Source: "c", Weight: 3}})
	first, _ := p.Take(nil)
	p.Undo(first)
	if again, _ := p.Take(nil); again.Source != first.Source {
		t.Errorf("after Undo(%s) the next pick is %s", first.Source, again.Source)
	}
	p.Undo(egress.Pick{Source: "a"}) // not a pick of p: nothing
	kept := map[string]int{}
	for i := range 600 {
		pk, _ := p.Take(nil)
		// Take back every other pick of c, as a busy source's would be.
		if pk.Source == "c" && i%2 == 0 {
			p.Undo(pk)
			continue
		}
		kept[pk.Source]++
	}
	total := kept["a"] + kept["b"] + kept["c"]
	for s, w := range map[string]int{"a": 1, "b": 2, "c": 3} {
		if want := total * w / 6; kept[s] < want-1 || kept[s] > want+1 {
			t.Errorf("kept picks %v: %s has %d, want %d±1", kept, s, kept[s], want)
		}
	}
}
