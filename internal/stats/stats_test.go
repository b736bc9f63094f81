package stats_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/postline/postline/internal/apperr"
	"github.com/postline/postline/internal/stats"
)

func utc(s string) time.Time {
	t, err := time.Parse(time.RFC3339, s)
	if err != nil {
		panic(err)
	}
	return t
}

// Buckets run from start's to end's, both whole, in UTC; a range of more
// than max is refused.
func TestBuckets(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		start, end string
		r          stats.Resolution
		want       []string
	}{
		{"2026-01-30T22:15:00Z", "2026-01-31T00:05:00Z", stats.Hour, []string{"2026-01-30T22:00:00Z", "2026-01-30T23:00:00Z", "2026-01-31T00:00:00Z"}},
		{"2026-02-27T23:59:59Z", "2026-03-01T00:00:00Z", stats.Day, []string{"2026-02-27T00:00:00Z", "2026-02-28T00:00:00Z", "2026-03-01T00:00:00Z"}},
		{"2025-12-31T10:00:00+05:00", "2026-02-01T00:00:00Z", stats.Month, []string{"2025-12-01T00:00:00Z", "2026-01-01T00:00:00Z", "2026-02-01T00:00:00Z"}},
		{"2026-05-05T05:05:05Z", "2026-05-05T05:05:05Z", stats.Day, []string{"2026-05-05T00:00:00Z"}},
	} {
		got, ok := stats.Buckets(utc(c.start), utc(c.end), c.r, 10)
		var s []string
		for _, b := range got {
			s = append(s, b.Format(time.RFC3339))
		}
		if !ok || strings.Join(s, " ") != strings.Join(c.want, " ") {
			t.Errorf("Buckets(%s, %s, %s) = %v, %v; want %v", c.start, c.end, c.r, s, ok, c.want)
		}
	}
	if got, ok := stats.Buckets(utc("2026-01-01T00:00:00Z"), utc("2026-01-01T10:00:00Z"), stats.Hour, 10); ok || got != nil {
		t.Errorf("11 hours with at most 10 = %v, %v; want refused", got, ok)
	}
	if _, ok := stats.Buckets(utc("2026-01-01T00:00:00Z"), utc("2026-01-01T09:59:00Z"), stats.Hour, 10); !ok {
		t.Error("10 hours with at most 10 were refused")
	}
}

type fakeStore struct {
	stats.Store
	rows   map[time.Time]map[string]int64
	daily  bool
	from   time.Time
	to     time.Time
	domain []int64
	tags   map[string]stats.Tag
}

func (f *fakeStore) Counts(_ context.Context, ids []int64, _ string, from, to time.Time, daily bool) (map[time.Time]map[string]int64, error) {
	f.domain, f.from, f.to, f.daily = ids, from, to, daily
	return f.rows, nil
}

func (f *fakeStore) Tag(_ context.Context, _ int64, name string) (stats.Tag, error) {
	if t, ok := f.tags[name]; ok {
		return t, nil
	}
	return stats.Tag{}, apperr.Errorf(apperr.NotFound, "tag not found")
}

// Totals asks the store for the buckets' whole span (days for day and
// month buckets) and sums its rows into the buckets they fall in.
func TestTotals(t *testing.T) {
	t.Parallel()
	f := &fakeStore{rows: map[time.Time]map[string]int64{
		utc("2026-01-03T00:00:00Z"): {"accepted.outgoing": 2},
		utc("2026-01-31T00:00:00Z"): {"accepted.outgoing": 1, "delivered.smtp": 1},
		utc("2026-02-01T00:00:00Z"): {"delivered.smtp": 5},
	}}
	s := stats.NewService(f)
	starts, _ := stats.Buckets(utc("2026-01-15T00:00:00Z"), utc("2026-03-02T00:00:00Z"), stats.Month, 10)
	got, err := s.Totals(context.Background(), []int64{7}, "", stats.Month, starts)
	if err != nil || len(got) != 3 {
		t.Fatalf("Totals = %v, %v", got, err)
	}
	if !f.daily || !f.from.Equal(utc("2026-01-01T00:00:00Z")) || !f.to.Equal(utc("2026-04-01T00:00:00Z")) {
		t.Errorf("asked the store for daily %v [%s, %s)", f.daily, f.from, f.to)
	}
	if got[0]["accepted.outgoing"] != 3 || got[0]["delivered.smtp"] != 1 || got[1]["delivered.smtp"] != 5 || len(got[2]) != 0 {
		t.Errorf("Totals = %v", got)
	}
	if got, err := s.Totals(context.Background(), nil, "", stats.Month, starts); err != nil || len(got) != 3 || len(got[0]) != 0 {
		t.Errorf("Totals of no domains = %v, %v; want three empty buckets", got, err)
	}
}

// Tag names are folded and bounded; a missing tag is Mailgun's 404.
func TestTagNames(t *testing.T) {
	t.Parallel()
	if got := stats.TagsOf(" News ,weekly,news,," + strings.Repeat("x", 129) + "," + strings.Repeat("é", 128)); strings.Join(got, "|") !=
		"news|weekly|"+strings.Repeat("é", 128) {
		t.Errorf("TagsOf = %q", got)
	}
	s := stats.NewService(&fakeStore{tags: map[string]stats.Tag{"news": {Name: "news"}}})
	if g, err := s.Tag(context.Background(), 1, "NEWS"); err != nil || g.Name != "news" {
		t.Errorf("Tag(NEWS) = %+v, %v", g, err)
	}
	if _, err := s.Tag(context.Background(), 1, "nope"); apperr.CodeOf(err) != apperr.NotFound || !strings.Contains(err.Error(), "Tag not found") {
		t.Errorf("Tag(nope) = %v", err)
	}
	_, err := s.Tag(context.Background(), 1, strings.Repeat("x", 129))
	if e, ok := apperr.As(err); !ok || e.Code != apperr.Invalid || len(e.Fields["tag"]) == 0 || !strings.Contains(e.Fields["tag"][0], "128") {
		t.Errorf("a 129-character tag = %v", err)
	}
}

// An entry's first 10 trackable tags are tracked (each of its recordings
// writes every one); a tag no request could name (control characters,
// not UTF-8) is not, and a request naming one is refused before the
// store sees it (PostgreSQL fails on NUL and invalid UTF-8).
func TestTagBounds(t *testing.T) {
	t.Parallel()
	var many []string
	for i := range 12 {
		many = append(many, fmt.Sprintf("t%02d", i))
	}
	got := stats.TagsOf("a\x00b,tab\tx,bad\xffbyte,ctl\x01," + strings.Join(many, ","))
	if strings.Join(got, ",") != strings.Join(many[:10], ",") {
		t.Errorf("TagsOf = %q; want the first 10 trackable: %q", got, many[:10])
	}
	s := stats.NewService(&fakeStore{tags: map[string]stats.Tag{}})
	ctx := context.Background()
	for _, name := range []string{"a\x00b", "tab\tx", "bad\xffbyte", "del\x7f"} {
		checks := map[string]error{}
		_, checks["Tag"] = s.Tag(ctx, 1, name)
		_, checks["Describe"] = s.Describe(ctx, 1, name, "x")
		checks["DeleteTag"] = s.DeleteTag(ctx, 1, name)
		_, checks["Tags pivot"] = s.Tags(ctx, 1, stats.TagPage{Pivot: name, Dir: stats.Next, Limit: 10})
		for call, err := range checks {
			if e, ok := apperr.As(err); !ok || e.Code != apperr.Invalid || len(e.Fields["tag"]) == 0 || !strings.Contains(e.Fields["tag"][0], "control characters") {
				t.Errorf("%s(%q) = %v; want invalid naming tag", call, name, err)
			}
		}
		_, err := s.Tags(ctx, 1, stats.TagPage{Prefix: name, Limit: 10})
		if e, ok := apperr.As(err); !ok || len(e.Fields["prefix"]) == 0 {
			t.Errorf("Tags(prefix %q) = %v; want invalid naming prefix", name, err)
		}
	}
	_, err := s.Describe(ctx, 1, "news", "a\x00b")
	if e, ok := apperr.As(err); !ok || len(e.Fields["description"]) == 0 || !strings.Contains(e.Fields["description"][0], "NUL") {
		t.Errorf("a description with NUL = %v", err)
	}
}
