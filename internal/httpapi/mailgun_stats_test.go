package httpapi

import (
	"fmt"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/postline/postline/internal/apperr"
)

// Mailgun's stats parameters: duration counts back from end and gives the
// resolution unless one is asked; buckets are whole, from start's to end's.
func TestMGStatsParams(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 3, 31, 15, 30, 0, 0, time.UTC)
	for _, c := range []struct {
		query, res, first, last string
		n                       int
	}{
		{"event=accepted", "day", "2026-03-24T00:00:00Z", "2026-03-31T00:00:00Z", 8},
		{"event=accepted&duration=24h", "hour", "2026-03-30T15:00:00Z", "2026-03-31T15:00:00Z", 25},
		{"event=accepted&duration=2m", "month", "2026-01-01T00:00:00Z", "2026-03-01T00:00:00Z", 3},
		{"event=accepted&duration=3d&resolution=hour", "hour", "2026-03-28T15:00:00Z", "2026-03-31T15:00:00Z", 73},
		{"event=accepted&start=1774000000&end=Tue,+31+Mar+2026+10:00:00+%2B0200", "day", "2026-03-20T00:00:00Z", "2026-03-31T00:00:00Z", 12},
		{"event=accepted&start=0&duration=1d&resolution=DAY", "day", "2026-03-30T00:00:00Z", "2026-03-31T00:00:00Z", 2},
	} {
		q, _ := url.ParseQuery(c.query)
		got, err := mgStatsParams(q, now)
		if err != nil {
			t.Errorf("%s: %v", c.query, err)
			continue
		}
		first, last := got.starts[0].Format(time.RFC3339), got.starts[len(got.starts)-1].Format(time.RFC3339)
		if string(got.res) != c.res || first != c.first || last != c.last || len(got.starts) != c.n {
			t.Errorf("%s: %s %s..%s (%d); want %s %s..%s (%d)", c.query, got.res, first, last, len(got.starts), c.res, c.first, c.last, c.n)
		}
	}
	for query, field := range map[string]string{
		"":                               "event",
		"event=accepted&event=sent":      "event",
		"event=accepted&resolution=week": "resolution",
		"event=accepted&duration=0d":     "duration",
		"event=accepted&duration=99999999999999m":  "duration",
		"event=accepted&start=2000&end=1000":       "start",
		"event=accepted&duration=1001h":            "duration",
		"event=accepted&resolution=hour&start=100": "start",
		"event=accepted&tag=x":                     "tag",
	} {
		q, _ := url.ParseQuery(query)
		_, err := mgStatsParams(q, now)
		if e, ok := apperr.As(err); !ok || len(e.Fields[field]) == 0 {
			t.Errorf("%q: %v; want a 400 naming %s", query, err, field)
		} else if (field == "duration" && strings.HasSuffix(query, "1001h")) && !strings.Contains(e.Fields[field][0], "1000") {
			t.Errorf("%q: %q does not name the limit", query, e.Fields[field][0])
		}
	}
}

// Thousands of unknown events are named once, the first with a count: a
// 59 KB URL of them was answered with 600 KB, a message per value.
func TestMGStatsUnknownEvents(t *testing.T) {
	t.Parallel()
	q := url.Values{}
	for i := range 5000 {
		q.Add("event", fmt.Sprintf("x%d", i))
	}
	q.Add("event", "accepted,X0") // the first again: not another
	_, err := mgStatsParams(q, time.Now())
	e, ok := apperr.As(err)
	if !ok || len(e.Fields["event"]) != 1 {
		t.Fatalf("5,000 unknown events: %v", err)
	}
	if msg := e.Fields["event"][0]; len(msg) > 200 || !strings.Contains(msg, `"x0" and 4999 more`) {
		t.Errorf("5,000 unknown events: %q; want the first named and the others counted", msg)
	}
}
