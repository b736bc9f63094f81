package shaping

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// logBuffer collects JSON log entries.
type logBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *logBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

// entries returns the logged entries whose message contains msg.
func (l *logBuffer) entries(t *testing.T, msg string) []map[string]any {
	t.Helper()
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []map[string]any
	for _, line := range strings.Split(strings.TrimSpace(l.b.String()), "\n") {
		if line == "" {
			continue
		}
		var e map[string]any
		if err := json.Unmarshal([]byte(line), &e); err != nil {
			t.Fatalf("log line %q: %v", line, err)
		}
		if strings.Contains(e["msg"].(string), msg) {
			out = append(out, e)
		}
	}
	return out
}

type watchBundle struct {
	path string
	logs *logBuffer
	w    *Watcher
}

func setupWatch(t *testing.T, text string, cfg WatcherConfig) *watchBundle {
	t.Helper()
	b := &watchBundle{path: writeFile(t, t.TempDir(), "shaping.toml", text), logs: &logBuffer{}}
	cfg.Paths = []string{b.path}
	cfg.Logger = slog.New(slog.NewJSONHandler(b.logs, nil))
	var err error
	if b.w, err = NewWatcher(context.Background(), cfg); err != nil {
		t.Fatal(err)
	}
	return b
}

func (b *watchBundle) write(t *testing.T, text string) {
	t.Helper()
	writeFile(t, filepath.Dir(b.path), "shaping.toml", text)
}

func (b *watchBundle) limit(domain string) int {
	return b.w.Rules().For(domain, []string{"mx." + domain}, "").ConnectionLimit.N
}

func TestReloadKeepsTheOldRulesWhenTheNewFileIsBad(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	b := setupWatch(t, "[\"example.com\"]\nconnection_limit = 3\n", WatcherConfig{})
	if b.limit("example.com") != 3 || b.w.runOnce(ctx) {
		t.Fatalf("start: limit %d, or an unchanged file reloaded", b.limit("example.com"))
	}

	b.write(t, "[\"example.com\"]\nconnection_limit = 5\n")
	if !b.w.runOnce(ctx) || b.limit("example.com") != 5 {
		t.Fatalf("a good change: limit %d, want 5", b.limit("example.com"))
	}

	b.write(t, "[\"example.com\"]\nmax_deliveries_per_connection = 10\nconnection_limit = \"lots\"\n")
	if b.w.runOnce(ctx) || b.limit("example.com") != 5 {
		t.Fatalf("a bad change replaced the rules: limit %d, want 5 still", b.limit("example.com"))
	}
	failed := b.logs.entries(t, "reload failed")
	if len(failed) != 1 {
		t.Fatalf("logged %d reload failures, want 1", len(failed))
	}
	if e := failed[0]; e["level"] != "ERROR" || e["file"] != b.path || e["line"] != 3.0 || e["key"] != `"example.com".connection_limit` {
		t.Errorf("failure entry %v; want level ERROR, the file, line 3 and key \"example.com\".connection_limit", e)
	}
	b.w.runOnce(ctx)
	if n := len(b.logs.entries(t, "reload failed")); n != 1 {
		t.Errorf("the same bad file was logged %d times; once is enough", n)
	}

	b.write(t, "[\"example.com\"]\nconnection_limit = 7\n")
	if !b.w.runOnce(ctx) || b.limit("example.com") != 7 {
		t.Errorf("after the fix: limit %d, want 7", b.limit("example.com"))
	}
}

func TestWarningsAreLoggedOncePerLoad(t *testing.T) {
	t.Parallel()
	b := setupWatch(t, "[\"default\"]\nconnection_limit = 3\ndata_timeout = \"30s\"\nmax_ready = 5\n", WatcherConfig{})
	b.w.runOnce(context.Background())
	entries := b.logs.entries(t, "ignoring keys Postline does not implement")
	if len(entries) != 1 {
		t.Fatalf("%d entries about ignored keys, want 1", len(entries))
	}
	keys, _ := entries[0]["keys"].(string)
	if entries[0]["level"] != "WARN" || !strings.Contains(keys, "default.data_timeout") || !strings.Contains(keys, "default.max_ready") {
		t.Errorf("entry %v should warn and list both keys", entries[0])
	}
}

func TestWatcherLoopFollowsTheFile(t *testing.T) {
	t.Parallel()
	reloaded := make(chan *Rules, 4)
	b := setupWatch(t, "[\"example.com\"]\nconnection_limit = 3\n", WatcherConfig{
		Interval: 10 * time.Millisecond, Reloaded: func(r *Rules) { reloaded <- r }})
	if err := b.w.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	defer b.w.Stop()
	b.write(t, "[\"example.com\"]\nconnection_limit = 4\n")
	select {
	case r := <-reloaded:
		if got := r.For("example.com", nil, "").ConnectionLimit.N; got != 4 {
			t.Errorf("reloaded rules say %d, want 4", got)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the watcher did not pick the change up")
	}
	if b.limit("example.com") != 4 {
		t.Errorf("Rules() still gives %d", b.limit("example.com"))
	}
}

func TestWatcherResolvesSitesAgain(t *testing.T) {
	t.Parallel()
	var now atomic.Int64
	now.Store(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC).UnixNano())
	var mu sync.Mutex
	mx := map[string][]string{"big.example": {"mx1.big.example"}}
	lookups := 0
	b := setupWatch(t, "[\"big.example\"]\nconnection_limit = 9\n", WatcherConfig{
		NowFunc: func() time.Time { return time.Unix(0, now.Load()) },
		LookupMX: func(ctx context.Context, d string) ([]string, error) {
			mu.Lock()
			defer mu.Unlock()
			lookups++
			return fakeMX(mx)(ctx, d)
		},
	})
	at := func(hosts ...string) int { return b.w.Rules().For("hosted.example", hosts, "").ConnectionLimit.N }
	if at("mx1.big.example") != 9 || lookups != 1 {
		t.Fatalf("big.example's site: limit %d after %d lookups", at("mx1.big.example"), lookups)
	}
	mu.Lock()
	mx["big.example"] = []string{"mx2.big.example"}
	mu.Unlock()
	if b.w.runOnce(context.Background()) || lookups != 1 {
		t.Fatalf("resolved again before ResolveEvery")
	}
	now.Add(int64(time.Hour))
	if !b.w.runOnce(context.Background()) || at("mx2.big.example") != 9 || at("mx1.big.example") != 0 {
		t.Errorf("after an hour the site follows the new MX: mx2 %d, mx1 %d", at("mx2.big.example"), at("mx1.big.example"))
	}
}

func TestNewWatcher(t *testing.T) {
	t.Parallel()
	w, err := NewWatcher(context.Background(), WatcherConfig{Logger: slog.New(slog.DiscardHandler)})
	if err != nil || w.Rules().Files() != nil || w.Rules().For("yahoo.com", yahooMX, "").Provider != "yahoo" {
		t.Errorf("no paths: want the built-in rules, got %v", err)
	}
	bad := writeFile(t, t.TempDir(), "bad.toml", "[\"default\"]\nidle_timeout = \"forever\"\n")
	_, err = NewWatcher(context.Background(), WatcherConfig{Paths: []string{bad}})
	var fe *FileError
	if !errors.As(err, &fe) || fe.Line != 2 {
		t.Errorf("a bad file at start: %v, want a *FileError at line 2", err)
	}
}
