package httpapi

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"net/http"
	"net/url"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/postline/postline/internal/account"
	"github.com/postline/postline/internal/apperr"
	"github.com/postline/postline/internal/mailgun"
	"github.com/postline/postline/internal/stats"
)

// Mailgun's stats API over the stat counts (package stats): per bucket
// of an hour, a day or a month (UTC), the totals of the events the events
// API shows, in Mailgun's shape, every bucket of the range present.

// mgStatsSpan is the range without start or duration: Mailgun's 7 days.
const mgStatsSpan = 7 * 24 * time.Hour

// mgDurationMax bounds a duration's number before the bucket count does
// (a month of 10^9 would overflow the date arithmetic).
const mgDurationMax = 100000

var mgDurationRE = regexp.MustCompile(`^([0-9]+)([hdm])$`)

// mgStatsQuery is a stats request: the events to show and the buckets.
type mgStatsQuery struct {
	events []string
	res    stats.Resolution
	starts []time.Time
}

// mgStatsParams reads event (repeated), start, end (Unix seconds or RFC
// 2822), resolution and duration (Mailgun's [0-9]+[hdm], counted back
// from end; without resolution its unit gives it).
func mgStatsParams(q url.Values, now time.Time) (mgStatsQuery, error) {
	fe := apperr.FieldErrors{}
	for name := range q {
		switch name {
		case "event", "start", "end", "resolution", "duration":
		default:
			fe.Add(name, "Unknown parameter "+strconv.Quote(name)+".")
		}
	}
	out := mgStatsQuery{events: mgStatEvents(q["event"], fe)}
	start, end, rangeField := mgStatRange(q, now, &out.res, fe)
	if err := fe.Err(); err != nil {
		return out, err
	}
	if start.After(end) {
		return out, apperr.Field(rangeField, "The start must not be after the end.")
	}
	starts, ok := stats.Buckets(start, end, out.res, stats.MaxBuckets)
	if !ok {
		return out, apperr.Field(rangeField, fmt.Sprintf("At most %d buckets: %s to %s by %s is more; narrow the range or choose a coarser resolution.",
			stats.MaxBuckets, mgStatsTime(start), mgStatsTime(end), out.res))
	}
	out.starts = starts
	return out, nil
}

// mgStatEvents reads the event values (each may also list several,
// comma-separated); none is Mailgun's 400. Unknown ones are named once,
// the first with how many more: a URL of thousands would otherwise be
// answered with ten times its bytes.
func mgStatEvents(values []string, fe apperr.FieldErrors) []string {
	var events []string
	var unknown string
	others := 0
	for _, v := range values {
		for _, e := range strings.Split(v, ",") {
			e = strings.ToLower(strings.TrimSpace(e))
			switch {
			case e == "" || slices.Contains(events, e):
			case !slices.Contains(mailgun.StatEvents, e):
				if unknown == "" {
					unknown = e
				} else if e != unknown {
					others++
				}
			default:
				events = append(events, e)
			}
		}
	}
	switch {
	case unknown != "" && others > 0:
		fe.Add("event", fmt.Sprintf("Unknown event %q and %d more; the events are %s.", unknown, others, strings.Join(mailgun.StatEvents, ", ")))
	case unknown != "":
		fe.Add("event", fmt.Sprintf("Unknown event %q; the events are %s.", unknown, strings.Join(mailgun.StatEvents, ", ")))
	case len(events) == 0:
		fe.Add("event", "Missing mandatory parameter: event (one or more of "+strings.Join(mailgun.StatEvents, ", ")+").")
	}
	return events
}

// mgStatRange reads start, end, duration and resolution (into res); the
// field is the one an empty or too long range is blamed on.
func mgStatRange(q url.Values, now time.Time, res *stats.Resolution, fe apperr.FieldErrors) (start, end time.Time, field string) {
	end, field = now, "start"
	for name, dst := range map[string]*time.Time{"end": &end, "start": &start} {
		if v := q.Get(name); v != "" {
			t, err := mgTime(v)
			if err != nil {
				fe.Add(name, mgTimeProblem(name))
			}
			*dst = t
		}
	}
	if q.Get("start") == "" {
		start = end.Add(-mgStatsSpan)
	}
	*res = stats.Resolution(strings.ToLower(q.Get("resolution")))
	if v := q.Get("duration"); v != "" {
		field = "duration"
		n, m := 0, mgDurationRE.FindStringSubmatch(v)
		if m != nil {
			n, _ = strconv.Atoi(m[1]) // out of range: the largest int, refused below
		}
		if m == nil || n < 1 || n > mgDurationMax {
			fe.Add("duration", fmt.Sprintf("The duration must be a number from 1 to %d and h, d or m (hours, days, months), e.g. 24h, 7d, 1m.", mgDurationMax))
		} else {
			unit := map[string]stats.Resolution{"h": stats.Hour, "d": stats.Day, "m": stats.Month}[m[2]]
			start = mgDurationBack(end, n, unit)
			if *res == "" {
				*res = unit
			}
		}
	}
	if *res == "" {
		*res = stats.Day
	}
	if !res.Valid() {
		fe.Add("resolution", "The resolution must be hour, day or month.")
	}
	return start, end, field
}

// mgDurationBack is n units of r before end.
func mgDurationBack(end time.Time, n int, r stats.Resolution) time.Time {
	switch r {
	case stats.Month:
		return end.AddDate(0, -n, 0)
	case stats.Day:
		return end.AddDate(0, 0, -n)
	}
	return end.Add(-time.Duration(n) * time.Hour)
}

// mgStatsTime is Mailgun's date in stats answers: RFC 2822, UTC.
func mgStatsTime(t time.Time) string { return t.UTC().Format("Mon, 02 Jan 2006 15:04:05 MST") }

// mgStatsAnswer is a stats answer: fields such as start and end, then
// the buckets.
type mgStatsAnswer struct {
	fields map[string]string
	q      mgStatsQuery
	totals []map[string]int64 // by bucket, then stat key
}

// mgStats reads the stats of the domains (for tag, or all with "") over
// q's buckets.
func (s *Server) mgStats(ctx context.Context, domainIDs []int64, tag string, q mgStatsQuery) (mgStatsAnswer, error) {
	totals, err := s.Stats.Totals(ctx, domainIDs, tag, q.res, q.starts)
	if err != nil {
		return mgStatsAnswer{}, err
	}
	return mgStatsAnswer{q: q, totals: totals, fields: map[string]string{"start": mgStatsTime(q.starts[0]),
		"end": mgStatsTime(q.starts[len(q.starts)-1]), "resolution": string(q.res)}}, nil
}

// write sends the answer in Mailgun's shape a bucket at a time: 1,000
// buckets of every event are ~480 KB of JSON, which built whole (as maps)
// cost ~13 times that in memory per request, and a client may ask for
// them as fast as its rate limit lets it. Write errors are the client's
// going away: the bufio.Writer keeps the first and writes no more.
func (a mgStatsAnswer) write(w http.ResponseWriter) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("X-Content-Type-Options", "nosniff")
	w.WriteHeader(http.StatusOK)
	bw := bufio.NewWriterSize(w, 16<<10)
	var one bytes.Buffer
	enc := json.NewEncoder(&one)
	enc.SetEscapeHTML(false)
	put := func(prefix string, v any) {
		one.Reset()
		enc.Encode(v)                                         //nolint:errcheck // strings and buckets always encode
		bw.WriteString(prefix)                                //nolint:errcheck
		bw.Write(bytes.TrimSuffix(one.Bytes(), []byte("\n"))) //nolint:errcheck
	}
	// The keys in name order, as a map encodes, the stats among them.
	keys := slices.Sorted(maps.Keys(a.fields))
	split, _ := slices.BinarySearch(keys, "stats")
	sep := "{"
	for _, k := range keys[:split] {
		put(sep, k)
		put(":", a.fields[k])
		sep = ","
	}
	bw.WriteString(sep + `"stats":[`) //nolint:errcheck
	for i, t := range a.q.starts {
		sep = ","
		if i == 0 {
			sep = ""
		}
		put(sep, mailgun.StatBucket(mgStatsTime(t), a.totals[i], a.q.events))
	}
	bw.WriteString("]") //nolint:errcheck
	for _, k := range keys[split:] {
		put(",", k)
		put(":", a.fields[k])
	}
	bw.WriteString("}\n") //nolint:errcheck
	bw.Flush()            //nolint:errcheck
}

// handleMGDomainStats is GET /v3/{domain}/stats/total.
func (s *Server) handleMGDomainStats(w http.ResponseWriter, r *http.Request, p account.Principal) error {
	d, err := s.mailgunDomain(r, p)
	if err != nil {
		return err
	}
	q, err := mgStatsParams(r.URL.Query(), time.Now())
	if err != nil {
		return err
	}
	out, err := s.mgStats(r.Context(), []int64{d.ID}, "", q)
	if err != nil {
		return err
	}
	out.write(w)
	return nil
}

// handleMGAccountStats is GET /v3/stats/total: every domain of the
// account the key may use, together.
func (s *Server) handleMGAccountStats(w http.ResponseWriter, r *http.Request, p account.Principal) error {
	q, err := mgStatsParams(r.URL.Query(), time.Now())
	if err != nil {
		return err
	}
	list, err := s.Domains.List(r.Context(), p.AccountID)
	if err != nil {
		return err
	}
	var ids []int64
	for _, d := range list {
		if p.DomainAllowed(d.Name) {
			ids = append(ids, d.ID)
		}
	}
	out, err := s.mgStats(r.Context(), ids, "", q)
	if err != nil {
		return err
	}
	out.write(w)
	return nil
}
