package event_test

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/postline/postline/internal/event"
)

func TestSynthetic(t *testing.T) {
	t.Parallel()
	to := time.Date(2026, 11, 21, 12, 0, 0, 0, time.UTC)
	from := to.Add(-30 * 24 * time.Hour)
	for _, n := range []int{0, 1, 15, 2000} {
		p := event.SyntheticParams{DomainID: 7, Domain: "shop.example", From: from, To: to, Count: n, Seed: 42}
		var got []event.Entry
		for e := range event.Synthetic(p) {
			got = append(got, e)
		}
		if len(got) != n {
			t.Fatalf("Count %d: got %d entries", n, len(got))
		}
		types, senders, rcpts := map[event.Type]int{}, map[string]bool{}, map[string]bool{}
		for i, e := range got {
			if i > 0 && e.CreatedAt.Before(got[i-1].CreatedAt) {
				t.Fatalf("Count %d: entry %d at %s before entry %d at %s", n, i, e.CreatedAt, i-1, got[i-1].CreatedAt)
			}
			if e.CreatedAt.Before(from) || e.CreatedAt.After(to) {
				t.Errorf("Count %d: entry %d at %s outside [%s, %s]", n, i, e.CreatedAt, from, to)
			}
			if e.DomainID != 7 || !strings.HasSuffix(e.Sender, "@shop.example") || e.MessageID == "" || e.Recipient == "" || e.Subject == "" {
				t.Errorf("Count %d: entry %d = %+v", n, i, e)
			}
			var d map[string]any
			if err := json.Unmarshal(e.Details, &d); err != nil {
				t.Errorf("Count %d: entry %d details %s: %v", n, i, e.Details, err)
			}
			types[e.Type]++
			senders[e.Sender], rcpts[e.Recipient] = true, true
		}
		if n >= 15 && len(types) != 11 {
			t.Errorf("Count %d: %d types %v, want all 11", n, len(types), types)
		}
		if n == 2000 {
			if len(senders) < 4 || len(rcpts) < 200 {
				t.Errorf("Count %d: %d senders, %d recipients: not varied enough", n, len(senders), len(rcpts))
			}
			// Spread over the window: some in the first and the last week.
			if got[0].CreatedAt.After(from.Add(7*24*time.Hour)) || got[n-1].CreatedAt.Before(to.Add(-7*24*time.Hour)) {
				t.Errorf("Count %d: entries span %s..%s, want most of the window", n, got[0].CreatedAt, got[n-1].CreatedAt)
			}
		}
	}
}
