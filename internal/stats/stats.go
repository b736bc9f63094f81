// Package stats keeps Mailgun's statistics of the delivery log: hourly
// counts per domain and per tag of the entries the events API shows, by
// Mailgun's stat keys (mailgun.StatKey), kept by the event store in the
// transactions that record the entries, and read back in hour, day or
// month buckets (UTC); and the domains' tags with their first and last
// use. It knows nothing of HTTP.
package stats

import (
	"context"
	"time"
)

// Resolution is the width of a bucket.
type Resolution string

// The resolutions, as Mailgun names them.
const (
	Hour  Resolution = "hour"
	Day   Resolution = "day"
	Month Resolution = "month"
)

// MaxBuckets bounds one answer: 1,000 hours is six weeks, 1,000 days
// almost three years.
const MaxBuckets = 1000

// Valid reports whether r is one of the three.
func (r Resolution) Valid() bool { return r == Hour || r == Day || r == Month }

// Floor is the start (UTC) of t's bucket.
func (r Resolution) Floor(t time.Time) time.Time {
	t = t.UTC()
	switch r {
	case Month:
		return time.Date(t.Year(), t.Month(), 1, 0, 0, 0, 0, time.UTC)
	case Day:
		return time.Date(t.Year(), t.Month(), t.Day(), 0, 0, 0, 0, time.UTC)
	}
	return t.Truncate(time.Hour)
}

// Next is the start of the bucket after the one starting at t.
func (r Resolution) Next(t time.Time) time.Time {
	switch r {
	case Month:
		return t.AddDate(0, 1, 0)
	case Day:
		return t.AddDate(0, 0, 1)
	}
	return t.Add(time.Hour)
}

// Buckets returns the starts of the buckets from start's to end's,
// both included; ok is false when there would be more than max.
func Buckets(start, end time.Time, r Resolution, max int) (starts []time.Time, ok bool) {
	last := r.Floor(end)
	for t := r.Floor(start); !t.After(last); t = r.Next(t) {
		if len(starts) == max {
			return nil, false
		}
		starts = append(starts, t)
	}
	return starts, true
}

// Store reads the counts and keeps the tags (the counts and the tags'
// first and last use are written by the event store as it records).
type Store interface {
	// Counts sums the hourly counts of the domains' entries in [from, to)
	// by stat key, for the tag or, with tag "", all entries. Keys of the
	// answer are the hours' starts, or the days' when daily.
	Counts(ctx context.Context, domainIDs []int64, tag string, from, to time.Time, daily bool) (map[time.Time]map[string]int64, error)
	// ListTags returns a page of the domain's tags in name order.
	ListTags(ctx context.Context, domainID int64, p TagPage) ([]Tag, error)
	// Tag returns one tag; apperr.NotFound when the domain has none such.
	Tag(ctx context.Context, domainID int64, name string) (Tag, error)
	// DescribeTag sets a tag's description; apperr.NotFound without it.
	DescribeTag(ctx context.Context, domainID int64, name, description string) error
	// DeleteTag removes a tag and its counts; apperr.NotFound without it.
	DeleteTag(ctx context.Context, domainID int64, name string) error
}

// Service reads statistics and manages tags.
type Service struct {
	store Store
}

// NewService returns the service over st.
func NewService(st Store) *Service { return &Service{store: st} }

// Totals returns the counts by stat key of each bucket (starts as
// Buckets gives them, of resolution r) of the domains' entries, for the
// tag or, with tag "", all of them. Buckets without entries are empty
// maps.
func (s *Service) Totals(ctx context.Context, domainIDs []int64, tag string, r Resolution, starts []time.Time) ([]map[string]int64, error) {
	out := make([]map[string]int64, len(starts))
	at := make(map[time.Time]int, len(starts))
	for i, t := range starts {
		out[i], at[t] = map[string]int64{}, i
	}
	if len(starts) == 0 || len(domainIDs) == 0 {
		return out, nil
	}
	// Month buckets are made of days: the store sums each day's hours.
	rows, err := s.store.Counts(ctx, domainIDs, tag, starts[0], r.Next(starts[len(starts)-1]), r != Hour)
	if err != nil {
		return nil, err
	}
	for t, counts := range rows {
		i, ok := at[r.Floor(t)]
		if !ok {
			continue
		}
		for k, n := range counts {
			out[i][k] += n
		}
	}
	return out, nil
}
