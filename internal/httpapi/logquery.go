package httpapi

import (
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/postline/postline/internal/apperr"
	"github.com/postline/postline/internal/event"
)

// Bounds of the log endpoints' limit, from the interface document.
const (
	listLimitDefault, listLimitMax     = 1000, 10_000
	streamLimitDefault, streamLimitMax = 50_000, 500_000
	maxFilterLen                       = 1000
)

// logQuery is a parsed log or log stream query.
type logQuery struct {
	filter event.Filter // Limit, Offset and AfterID included
	follow bool
}

// parseLogQuery reads the query of the list (stream false) or the stream.
// Every bad parameter is reported, each named in the message; unknown
// parameters are ignored, as are empty ones.
// maxOffset bounds list paging (deeper pages are for the stream, which
// pages by id); it also keeps offset + limit + the count cap far from
// overflowing.
const maxOffset = 10_000_000

func parseLogQuery(r *http.Request, stream bool) (logQuery, error) {
	q := r.URL.Query()
	var lq logQuery
	f := &lq.filter
	var problems []string
	fe := apperr.FieldErrors{}
	bad := func(field, msg string) { fe.Add(field, msg); problems = append(problems, msg) }

	allowed := event.Types()
	if stream {
		allowed = event.StreamTypes()
	}
	parseLogFilter(q, allowed, f, bad)
	def, hi := listLimitDefault, listLimitMax
	if stream {
		def, hi = streamLimitDefault, streamLimitMax
	}
	f.Limit = def
	if v := q.Get("limit"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 || n > hi {
			bad("limit", fmt.Sprintf("The limit must be an integer between 1 and %d.", hi))
		}
		f.Limit = n
	}
	if v := q.Get("offset"); v != "" && !stream {
		n, err := strconv.Atoi(v)
		if err != nil || n < 0 || n > maxOffset {
			bad("offset", fmt.Sprintf("The offset must be an integer between 0 and %d.", maxOffset))
		}
		f.Offset = n
	}
	if stream {
		lq.follow = parseBoolParam(q, "follow", bad)
		// The header wins: a reconnecting EventSource sends the newest id
		// there while its URL still carries the first one.
		field, v := "Last-Event-ID", r.Header.Get("Last-Event-ID")
		if v == "" {
			field, v = "last_event_id", q.Get("last_event_id")
		}
		if v = strings.TrimSpace(v); v != "" {
			n, err := strconv.ParseInt(v, 10, 64)
			if err != nil || n < 0 {
				bad(field, "The "+field+" must be a log entry id (a non-negative integer).")
			}
			f.AfterID = n
		}
	}
	if len(problems) > 0 {
		return lq, fe.ErrMessage(strings.Join(problems, " "))
	}
	return lq, nil
}

// parseLogFilter reads the filters the log endpoints share (start, end,
// sender, recipient, subject, tags, event_type among allowed) into f,
// reporting each bad one to bad.
func parseLogFilter(q url.Values, allowed []event.Type, f *event.Filter, bad func(field, msg string)) {
	f.Start = parseTimeParam(q, "start", false, bad)
	f.End = parseTimeParam(q, "end", true, bad)
	if !f.Start.IsZero() && !f.End.IsZero() && f.End.Before(f.Start) {
		bad("end", "The end must not be before the start.")
	}
	for _, p := range []struct {
		name string
		dst  *string
	}{{"sender", &f.Sender}, {"recipient", &f.Recipient}, {"subject", &f.Subject}, {"tags", &f.Tags}} {
		*p.dst = q.Get(p.name)
		if len(*p.dst) > maxFilterLen {
			bad(p.name, fmt.Sprintf("The %s filter must be at most %d characters.", p.name, maxFilterLen))
		} else if strings.ContainsRune(*p.dst, 0) {
			bad(p.name, fmt.Sprintf("The %s filter must not contain NUL characters.", p.name))
		}
	}
	if v := q.Get("event_type"); v != "" {
		t := event.Type(v)
		if !containsType(allowed, t) {
			bad("event_type", "The event_type must be one of: "+joinTypes(allowed)+".")
		}
		f.Type = t
	}
}

func containsType(ts []event.Type, t event.Type) bool {
	for _, v := range ts {
		if v == t {
			return true
		}
	}
	return false
}

func joinTypes(ts []event.Type) string {
	s := make([]string, len(ts))
	for i, t := range ts {
		s[i] = string(t)
	}
	return strings.Join(s, ", ")
}

func parseBoolParam(q url.Values, name string, bad func(field, msg string)) bool {
	switch strings.ToLower(q.Get(name)) {
	case "", "0", "false", "no":
		return false
	case "1", "true", "yes":
		return true
	}
	bad(name, "The "+name+" parameter must be true or false.")
	return false
}

// ISO 8601 forms accepted for start and end: with Z or a numeric offset,
// without a zone (UTC), to the minute or the second with any fraction, or
// a date alone.
var timeLayouts = []string{
	"2006-01-02T15:04:05.999999999Z07:00",
	"2006-01-02T15:04:05.999999999Z0700",
	"2006-01-02T15:04Z07:00",
	"2006-01-02T15:04:05.999999999",
	"2006-01-02T15:04",
	"2006-01-02 15:04:05.999999999Z07:00",
	"2006-01-02 15:04:05.999999999",
}

// parseTimeParam parses an ISO 8601 date-time or date. A date alone means
// the whole day in UTC: its first millisecond for a start, its last for an
// end, since both bounds are inclusive.
func parseTimeParam(q url.Values, name string, end bool, bad func(field, msg string)) time.Time {
	v := strings.TrimSpace(q.Get(name))
	if v == "" {
		return time.Time{}
	}
	if d, err := time.Parse("2006-01-02", v); err == nil {
		if end {
			return d.Add(24*time.Hour - time.Millisecond)
		}
		return d
	}
	for _, s := range []string{v, fixPlus(v)} {
		for _, l := range timeLayouts {
			if t, err := time.Parse(l, s); err == nil {
				return t.UTC()
			}
		}
	}
	bad(name, "The "+name+" must be an ISO 8601 date-time (e.g. 2026-11-21T09:30:00Z) or date (2026-11-21).")
	return time.Time{}
}

// fixPlus restores the + of an offset that an unencoded query string turned
// into a space ("...T10:00:00 02:00").
func fixPlus(v string) string {
	if i := strings.LastIndexByte(v, ' '); i > 10 {
		return v[:i] + "+" + v[i+1:]
	}
	return v
}
