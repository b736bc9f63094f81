package httpapi

import (
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/mail"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/postline/postline/internal/account"
	"github.com/postline/postline/internal/apperr"
	"github.com/postline/postline/internal/event"
	"github.com/postline/postline/internal/mailgun"
)

// Mailgun's events API over the log. Pages follow event ids, not offsets,
// and stop at the log's horizon (no id at or below it can still commit),
// so a poller that follows paging.next until an empty page and then polls
// the same next URL again sees every event exactly once while new ones
// arrive.

const (
	mgEventsMax     = 300
	mgEventsDefault = 100
	// mgScanRows is the fewest rows a page's scan reads at a time: a
	// small limit still reads the log in useful steps.
	mgScanRows    = 100
	mgScanMaxRows = 1000 // what a scan grows to while a page finds nothing
	// mgScanBatches is how many scans a page may take to fill up; once
	// it has one event it stops there, and a page that has none keeps
	// scanning to the end of the log, so an empty page is always the end.
	mgScanBatches = 10
)

// mgTypes are the log's entry types that Mailgun's events come from:
// what a page asks the store for (mgWanted then sorts out the few that
// repeat another or are of another kind).
var mgTypes = map[string][]event.Type{
	"accepted":     {event.Queued},
	"delivered":    {event.Delivered},
	"failed":       {event.TemporaryFail, event.PermanentFail, event.Bounced, event.Failed},
	"opened":       {event.Opened},
	"clicked":      {event.Clicked},
	"unsubscribed": {event.Unsubscribed},
	"complained":   {event.Unsubscribed},
}

// mgTypeSet is the entry types behind Mailgun events of kinds (every
// kind when empty).
func mgTypeSet(kinds []string) event.TypeSet {
	if len(kinds) == 0 {
		kinds = mailgun.Events
	}
	var ts []event.Type
	for _, k := range kinds {
		ts = append(ts, mgTypes[k]...)
	}
	return event.SetOf(ts...)
}

// mgCursor is a page: its token is this JSON, base64url-encoded.
type mgCursor struct {
	Asc    bool     `json:"a"`           // presentation order
	Back   bool     `json:"b,omitempty"` // the page before C in that order (previous, last)
	C      int64    `json:"c"`           // asc scan: ids > C; desc scan: ids <= C (0: from the far end)
	Events []string `json:"e,omitempty"`
	Begin  int64    `json:"bg,omitempty"` // Unix ms
	End    int64    `json:"en,omitempty"`
	Rcpt   string   `json:"r,omitempty"`
	Tag    string   `json:"t,omitempty"`
	MsgID  string   `json:"m,omitempty"`
	Limit  int      `json:"l"`
}

func (c mgCursor) token() string {
	b, _ := json.Marshal(c)
	return base64.RawURLEncoding.EncodeToString(b)
}

func parseMGCursor(tok string) (mgCursor, error) {
	var c mgCursor
	b, err := base64.RawURLEncoding.DecodeString(tok)
	if err != nil || json.Unmarshal(b, &c) != nil || c.Limit < 1 || c.Limit > mgEventsMax {
		return c, apperr.Field("page", "The page token is not one this server gave.")
	}
	return c, nil
}

// checkFilters refuses filters the log cannot be asked for, from the
// query or a page token alike: as the log's own filters, bounded and
// without NUL, and UTF-8 (PostgreSQL fails a query on NUL or invalid
// UTF-8 in a parameter).
func (c mgCursor) checkFilters() error {
	fe := apperr.FieldErrors{}
	for name, v := range map[string]string{"recipient": c.Rcpt, "tags": c.Tag, "message-id": c.MsgID} {
		if len(v) > maxFilterLen || !utf8.ValidString(v) || strings.ContainsRune(v, 0) {
			fe.Add(name, fmt.Sprintf("The %s filter must be at most %d characters of UTF-8 without NUL characters.", name, maxFilterLen))
		}
	}
	return fe.Err()
}

// mgEventParams reads the query of GET /v3/{domain}/events.
func mgEventParams(q url.Values) (mgCursor, error) {
	c := mgCursor{Limit: mgEventsDefault}
	fe := apperr.FieldErrors{}
	for name := range q {
		switch name {
		case "begin", "end", "ascending", "limit", "event", "recipient", "tags", "message-id", "page":
		default:
			fe.Add(name, "Unknown parameter "+strconv.Quote(name)+".")
		}
	}
	var begin, end time.Time
	for name, dst := range map[string]*time.Time{"begin": &begin, "end": &end} {
		if v := q.Get(name); v != "" {
			t, err := mgTime(v)
			if err != nil {
				fe.Add(name, mgTimeProblem(name))
			}
			*dst = t
		}
	}
	switch strings.ToLower(q.Get("ascending")) {
	case "yes", "true":
		c.Asc = true
	case "", "no", "false":
		// Mailgun: without ascending, a begin later than end pages backwards.
		c.Asc = q.Get("ascending") == "" && !begin.IsZero() && (end.IsZero() || !begin.After(end))
	default:
		fe.Add("ascending", "The ascending must be yes or no.")
	}
	if begin.After(end) && !end.IsZero() {
		begin, end = end, begin
	}
	if !begin.IsZero() {
		c.Begin = begin.UnixMilli()
	}
	if !end.IsZero() {
		c.End = end.UnixMilli()
	}
	if v := q.Get("limit"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 || n > mgEventsMax {
			fe.Add("limit", "The limit must be 1 to 300.")
		}
		c.Limit = n
	}
	if v := q.Get("event"); v != "" {
		for _, e := range strings.Split(v, " OR ") {
			e = strings.ToLower(strings.TrimSpace(strings.Trim(strings.TrimSpace(e), "()")))
			if !slices.Contains(mailgun.Events, e) {
				fe.Add("event", "Unknown event "+strconv.Quote(e)+"; the events are "+strings.Join(mailgun.Events, ", ")+".")
				continue
			}
			c.Events = append(c.Events, e)
		}
	}
	c.Rcpt, c.Tag, c.MsgID = q.Get("recipient"), q.Get("tags"), strings.Trim(q.Get("message-id"), "<>")
	return c, fe.Err()
}

// mgTimeMax is the last second mgTime takes (9999-12-31T23:59:59Z): the
// last an RFC 2822 date can write, and far from the int64 milliseconds the
// store compares.
const mgTimeMax = 253402300799

// errMGTime is mgTime's refusal, which callers word with mgTimeProblem.
var errMGTime = errors.New("out of range")

// mgTimeProblem words mgTime's refusal for the parameter name.
func mgTimeProblem(name string) string {
	return fmt.Sprintf("The %s must be Unix seconds from 0 to %d or an RFC 2822 date in years 1970 to 9999.", name, int64(mgTimeMax))
}

// mgTime reads Unix seconds (fractional) or an RFC 2822 date, from the
// epoch to the end of year 9999: NaN, infinities and larger numbers would
// wrap around in the conversion to milliseconds.
func mgTime(v string) (time.Time, error) {
	if f, err := strconv.ParseFloat(v, 64); err == nil {
		if !(f >= 0 && f <= mgTimeMax) { // NaN fails both
			return time.Time{}, errMGTime
		}
		return time.UnixMilli(int64(f * 1000)), nil
	}
	t, err := mail.ParseDate(v)
	if err != nil || t.Unix() < 0 || t.Unix() > mgTimeMax {
		return time.Time{}, errMGTime
	}
	return t, nil
}

// handleMailgunEvents is GET /v3/{domain}/events and, with {token}, a page
// the answer linked to (the SDK repeats begin, limit ... beside it: the
// token wins).
func (s *Server) handleMailgunEvents(w http.ResponseWriter, r *http.Request, p account.Principal) error {
	d, err := s.mailgunDomain(r, p)
	if err != nil {
		return err
	}
	var c mgCursor
	if tok := r.PathValue("token"); tok != "" {
		c, err = parseMGCursor(tok)
	} else {
		c, err = mgEventParams(r.URL.Query())
	}
	if err == nil {
		err = c.checkFilters()
	}
	if err != nil {
		return err
	}
	items, edge, err := s.mgPage(r, d.ID, c)
	if err != nil {
		return err
	}
	base := s.publicBase(r) + "/v3/" + d.Name + "/events/"
	next, prev, first, last := c, c, c, c
	first.Back, first.C = false, 0
	last.Back, last.C = true, 0
	next.Back, prev.Back = false, true
	if len(items) > 0 {
		firstID, _ := strconv.ParseInt(items[0]["id"].(string), 10, 64)
		lastID, _ := strconv.ParseInt(items[len(items)-1]["id"].(string), 10, 64)
		if c.Asc {
			next.C, prev.C = max(lastID, edge), belowID(firstID)
		} else {
			next.C, prev.C = belowID(lastID), firstID
		}
	} else if !c.Back && edge != 0 {
		next.C = edge
	}
	writeJSON(w, http.StatusOK, map[string]any{"items": items, "paging": map[string]string{
		"next": base + next.token(), "previous": base + prev.token(), "first": base + first.token(), "last": base + last.token()}})
	return nil
}

// belowID is the cursor of a newest-first scan that starts below id: -1
// when nothing is left there (0 would start again from the newest).
func belowID(id int64) int64 {
	if id <= 1 {
		return -1
	}
	return id - 1
}

// publicBase is the absolute base of paging URLs: --public-url, or the
// request's own host.
func (s *Server) publicBase(r *http.Request) string {
	if s.PublicURL != "" {
		return strings.TrimSuffix(s.PublicURL, "/")
	}
	scheme := "http"
	if r.TLS != nil {
		scheme = "https"
	}
	return scheme + "://" + r.Host
}

// mgPage reads one page: up to c.Limit events in presentation order, and
// for an ascending scan the last id it looked at (so filtered-out rows
// are not read again).
func (s *Server) mgPage(r *http.Request, domainID int64, c mgCursor) ([]map[string]any, int64, error) {
	ctx := r.Context()
	top, err := s.Events.Horizon(ctx, domainID)
	if err != nil || top == 0 {
		return []map[string]any{}, 0, err
	}
	scanAsc := c.Asc != c.Back
	f := event.Filter{DomainID: domainID, Recipient: c.Rcpt, Tags: c.Tag, MessageID: c.MsgID, Limit: c.Limit}
	if c.Begin != 0 {
		f.Start = time.UnixMilli(c.Begin)
	}
	if c.End != 0 {
		f.End = time.UnixMilli(c.End)
	}
	f.AnyOf, f.Limit = mgTypeSet(c.Events), max(c.Limit, mgScanRows)
	cursor := c.C
	var out []event.Entry
	var scanned int64
	for n := 0; ; n++ {
		if scanAsc {
			f.Order, f.AfterID, f.UpToID = event.OldestFirst, cursor, top
		} else {
			if cursor == 0 || cursor > top {
				cursor = top
			}
			f.Order, f.UpToID = event.NewestIDFirst, cursor
		}
		if cursor < 0 || (!scanAsc && cursor == 0) {
			break
		}
		batch, err := s.Events.Scan(ctx, f)
		if err != nil {
			return nil, 0, err
		}
		for _, en := range batch {
			if len(out) == c.Limit {
				break // the rest is the next page's: not consumed
			}
			scanned = en.ID
			if mgWanted(en, c.Events) {
				out = append(out, en)
			}
		}
		if len(out) < c.Limit && len(batch) < f.Limit && scanAsc {
			scanned = top // every row up to the horizon was looked at
		}
		if len(out) >= c.Limit || len(batch) < f.Limit || (len(out) > 0 && n+1 >= mgScanBatches) {
			break
		}
		if scanAsc {
			cursor = scanned
		} else {
			cursor = scanned - 1
		}
		if len(out) == 0 { // matches are sparse here: read further at a time
			f.Limit = min(2*f.Limit, mgScanMaxRows)
		}
	}
	if scanAsc != c.Asc {
		slices.Reverse(out)
	}
	items, err := s.mgItems(r, domainID, out)
	if !scanAsc {
		scanned = 0
	}
	return items, scanned, err
}

// mgWanted says whether an entry is a Mailgun event, of the asked kinds.
func mgWanted(en event.Entry, kinds []string) bool {
	name, _ := mailgun.EventName(en)
	return name != "" && (len(kinds) == 0 || slices.Contains(kinds, name))
}

// mgItems renders entries in Mailgun's event shape, with the user
// variables (v:) of their messages.
func (s *Server) mgItems(r *http.Request, domainID int64, entries []event.Entry) ([]map[string]any, error) {
	var ids []string
	for _, en := range entries {
		if !slices.Contains(ids, en.MessageID) {
			ids = append(ids, en.MessageID)
		}
	}
	headers, err := s.Sending.SendHeaders(r.Context(), domainID, ids)
	if err != nil {
		return nil, err
	}
	items := make([]map[string]any, 0, len(entries))
	for _, en := range entries {
		items = append(items, mailgun.Item(en, headers[en.MessageID]))
	}
	return items, nil
}
