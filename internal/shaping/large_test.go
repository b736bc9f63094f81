package shaping

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"
)

// manySections is a file of n domain sections, each with an automation
// rule, and the 1-based line of the last one's connection_limit.
func manySections(n int, bad bool) (text string, lastLimitLine int) {
	var b strings.Builder
	line := 1
	for i := range n {
		limit := "3"
		if bad && i == n-1 {
			limit = `"lots"`
		}
		fmt.Fprintf(&b, "[\"d%d.example\"]\nconnection_limit = %s\n[[\"d%d.example\".automation]]\nregex = \"x%d\"\n"+
			"action = \"Suspend\"\nduration = \"1h\"\n", i, limit, i, i)
		lastLimitLine = line + 1
		line += 6
	}
	return b.String(), lastLimitLine
}

// A large file loads in time proportional to its size, with each rule's
// line and each error's line right. Finding each key's line used to copy
// and split the whole file once per section and rule: 4,000 sections took
// 20 s, 100,000 more than 5 minutes.
func TestLargeFileLoadsInLinearTime(t *testing.T) {
	t.Parallel()
	const n = 10000
	text, line := manySections(n, false)
	b := setupWatchTimed(t, text)
	r := b.w.Rules().For(fmt.Sprintf("d%d.example", n-1), []string{"mx.example"}, "")
	if r.ConnectionLimit.N != 3 || len(r.Automation) != 1 || r.Automation[0].Line != line+1 {
		t.Errorf("last section: limit %d, automation %+v; want 3 and one rule at line %d", r.ConnectionLimit.N, r.Automation,
			line+1)
	}

	bad, badLine := manySections(n, true)
	b.write(t, bad)
	start := time.Now()
	if b.w.runOnce(context.Background()) {
		t.Fatal("a file with a bad value was put in force")
	}
	if took := time.Since(start); took > 15*time.Second {
		t.Errorf("reloading %d sections took %v", n, took)
	}
	failed := b.logs.entries(t, "reload failed")
	if len(failed) != 1 || failed[0]["line"] != float64(badLine) {
		t.Errorf("reload failures %v; want one at line %d", failed, badLine)
	}
}

func setupWatchTimed(t *testing.T, text string) *watchBundle {
	t.Helper()
	start := time.Now()
	b := setupWatch(t, text, WatcherConfig{})
	if took := time.Since(start); took > 15*time.Second {
		t.Errorf("loading took %v", took)
	}
	return b
}

// A file larger than MaxFileSize is refused naming the bound: at start,
// and on reload, which keeps the rules in force.
func TestOversizeFileRefused(t *testing.T) {
	t.Parallel()
	b := setupWatch(t, "[\"example.com\"]\nconnection_limit = 3\n", WatcherConfig{})
	huge := "[\"example.com\"]\nconnection_limit = 5\n" + strings.Repeat("# padding\n", MaxFileSize/10+1)
	b.write(t, huge)
	if b.w.runOnce(context.Background()) || b.limit("example.com") != 3 {
		t.Fatalf("an oversize file was put in force: limit %d, want 3 still", b.limit("example.com"))
	}
	failed := b.logs.entries(t, "reload failed")
	if len(failed) != 1 || !strings.Contains(fmt.Sprint(failed[0]["error"]), "larger than 8388608 bytes") {
		t.Errorf("reload failures %v; want one naming the 8 MiB bound", failed)
	}
	if _, err := Load(b.path); err == nil || !strings.Contains(err.Error(), b.path) {
		t.Errorf("Load of the oversize file: %v; want an error naming the file", err)
	}
}
