package app_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net"
	"net/http"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/postline/postline/internal/app"
	"github.com/postline/postline/internal/config"
	"github.com/postline/postline/internal/dnstest"
)

// lockedBuffer is a log destination safe for the server's goroutines.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// TestClientHangUpIs499: a client that disconnects while its request is
// served is logged at INFO with status 499 and counted as 499, never as a
// server error; the work it started stops.
func TestClientHangUpIs499(t *testing.T) {
	t.Parallel()
	dns := dnstest.New(t)
	dns.AddMX("slow-corp.net", 10, "mx.slow-corp.net")
	dns.SetDelay("slow-corp.net", 3*time.Second)
	cfg := config.Default()
	cfg.DataDir = t.TempDir()
	cfg.DatabaseURL = "sqlite:" + filepath.Join(cfg.DataDir, "postline.db")
	cfg.DNSServer, cfg.Addr = dns.Addr(), "127.0.0.1:0"
	logs := &lockedBuffer{}
	logger := slog.New(slog.NewJSONHandler(logs, &slog.HandlerOptions{Level: slog.LevelInfo}))
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	a, err := app.Open(ctx, cfg, logger, app.Options{DKIMKeyBits: 1024})
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	key, _, err := a.Accounts.Bootstrap(ctx)
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go a.Serve(ctx, ln)
	base := "http://" + ln.Addr().String()
	users, _ := a.Accounts.Users(ctx)

	// The client gives up after 300 ms; the lookup takes 3 s.
	client := &http.Client{Timeout: 300 * time.Millisecond}
	req, _ := http.NewRequest("POST", base+"/api/email/validate/bulk/strict",
		strings.NewReader(`{"emails":["a@slow-corp.net","b@slow-corp.net"]}`))
	req.Header.Set("Content-Type", "application/json")
	req.SetBasicAuth(users[0].Login, key)
	if resp, err := client.Do(req); err == nil {
		resp.Body.Close()
		t.Fatalf("the request finished (%d) before the client gave up", resp.StatusCode)
	}

	var line map[string]any
	deadline := time.Now().Add(10 * time.Second)
	for line == nil {
		for _, l := range strings.Split(logs.String(), "\n") {
			if strings.Contains(l, `"path":"/api/email/validate/bulk/strict"`) {
				json.Unmarshal([]byte(l), &line)
			}
		}
		if line == nil && time.Now().After(deadline) {
			t.Fatalf("no request log line; logs:\n%s", logs.String())
		}
		time.Sleep(20 * time.Millisecond)
	}
	if line["status"] != 499.0 || line["level"] != "INFO" || line["error"] != nil {
		t.Errorf("hang-up logged as %v, want INFO with status 499 and no error", line)
	}
	resp, err := http.Get(base + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	var bulk []string
	for _, l := range strings.Split(string(body), "\n") {
		if strings.HasPrefix(l, "postline_http_requests_total") && strings.Contains(l, "bulk/strict") {
			bulk = append(bulk, l)
		}
	}
	if len(bulk) != 1 || !strings.Contains(bulk[0], `status="499"`) {
		t.Errorf("metrics for the hung-up route: %q, want one series with status 499", bulk)
	}
}
