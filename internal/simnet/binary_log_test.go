package simnet_test

import (
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

// waitSettled waits until each of rcpts has its outcome in the log: a
// delivered entry, or two temporary_fail entries (tried, and tried
// again).
func (s *serve) waitSettled(t *testing.T, rcpts []string) {
	t.Helper()
	for deadline := time.Now().Add(45 * time.Second); ; time.Sleep(200 * time.Millisecond) {
		got := byRecipient(s.entries(t, ""))
		waiting := 0
		for _, r := range rcpts {
			events := countEvents(got[strings.ToLower(r)])
			if events["delivered"] == 0 && events["temporary_fail"] < 2 {
				waiting++
			}
		}
		if waiting == 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Errorf("after 45 s %d of %d recipients have no outcome in the log", waiting, len(rcpts))
			return
		}
	}
}
