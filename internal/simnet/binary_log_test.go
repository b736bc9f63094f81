package simnet_test

import (
	"context"
	"encoding/json"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"testing"
	"time"
)

// logEntry is one delivery log entry as the API gives it.
type logEntry struct {
	Recipient string         `json:"recipient"`
	EventType string         `json:"event_type"`
	Details   map[string]any `json:"details"`
}

// str is a details field as a string ("" when absent or not a string).
func (e logEntry) str(key string) string {
	s, _ := e.Details[key].(string)
	return s
}

// tls is details.tls as an object (nil when absent or not an object).
func (e logEntry) tls() map[string]any {
	m, _ := e.Details["tls"].(map[string]any)
	return m
}

// entries is every entry of the sending domain's log of the event type
// ("" for all), through GET /api/domains/{domain}/log, page by page.
func (s *serve) entries(t *testing.T, eventType string) []logEntry {
	t.Helper()
	const limit = 10000
	var out []logEntry
	for offset := 0; ; offset += limit {
		q := url.Values{"limit": {strconv.Itoa(limit)}, "offset": {strconv.Itoa(offset)}}
		if eventType != "" {
			q.Set("event_type", eventType)
		}
		req, _ := http.NewRequest("GET", "http://"+s.addr+"/api/domains/shop.sender.test/log?"+q.Encode(), nil)
		req.SetBasicAuth("alice", s.key)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		var body struct {
			Data []logEntry `json:"data"`
		}
		err = json.NewDecoder(resp.Body).Decode(&body)
		resp.Body.Close()
		if err != nil || resp.StatusCode != 200 {
			t.Fatalf("log: %s, %v", resp.Status, err)
		}
		out = append(out, body.Data...)
		if len(body.Data) < limit {
			return out
		}
	}
}

// byRecipient groups entries by recipient, in the log's order.
func byRecipient(entries []logEntry) map[string][]logEntry {
	out := map[string][]logEntry{}
	for _, e := range entries {
		r := strings.ToLower(e.Recipient)
		out[r] = append(out[r], e)
	}
	return out
}

// waitEntries waits until the log holds at least count entries of the
// event type for each of rcpts, and returns that type's entries by
// recipient.
func (s *serve) waitEntries(t *testing.T, eventType string, rcpts []string, count int) map[string][]logEntry {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 45*time.Second)
	defer cancel()
	for {
		got := byRecipient(s.entries(t, eventType))
		missing := ""
		for _, r := range rcpts {
			if len(got[strings.ToLower(r)]) < count {
				missing = r
				break
			}
		}
		if missing == "" {
			return got
		}
		select {
		case <-ctx.Done():
			t.Fatalf("after 45 s %s has %d %s entries, want at least %d", missing, len(got[missing]), eventType, count)
		case <-time.After(200 * time.Millisecond):
		}
	}
}
