package console

import (
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/postline/postline/internal/account"
	"github.com/postline/postline/internal/apperr"
	"github.com/postline/postline/internal/event"
	"github.com/postline/postline/internal/logexport"
)

// logPageSize is the entries one log page shows.
const logPageSize = 50

// logPage is a domain's delivery log: the API's filters (type, recipient,
// sender, subject, tags) and one search box (logSearch), newest first, in pages, through the same
// service and indexes as GET /api/domains/{domain}/log.
func (c *Console) logPage(w http.ResponseWriter, r *http.Request, s *account.Session) error {
	d, err := c.deps.Domains.Owned(r.Context(), s.AccountID, r.PathValue("name"))
	if err != nil {
		return err
	}
	q := r.URL.Query()
	f, problems := logFilter(q, d.ID)
	goTo, searched, err := c.logSearch(r, d, q.Get("q"), &f)
	if err != nil {
		return err
	}
	if goTo != "" {
		http.Redirect(w, r, goTo, http.StatusSeeOther)
		return nil
	}
	f.Limit = logPageSize
	page, problems := pageNumber(q, 200, problems)
	f.Offset = (page - 1) * logPageSize
	pg, err := c.deps.Events.List(r.Context(), f)
	if err != nil {
		return err
	}
	next := url.Values{}
	for k, v := range q {
		next[k] = v
	}
	next.Set("page", strconv.Itoa(page+1))
	prev := url.Values{}
	for k, v := range q {
		prev[k] = v
	}
	prev.Set("page", strconv.Itoa(page-1))
	var newest int64
	for _, e := range pg.Entries {
		newest = max(newest, e.ID)
	}
	c.render(w, r, http.StatusOK, "log", view{Title: "Log · " + d.Name, Session: s, Data: map[string]any{
		"Newest": newest, "Tail": page == 1 && f.OnlyTimeAndType() && f.Type == "",
		"Domain": d, "Entries": pg.Entries, "Total": pg.Total, "Exact": pg.Exact, "Page": page,
		"HasNext": f.Offset+len(pg.Entries) < pg.Total, "HasPrev": page > 1,
		"Next": "?" + next.Encode(), "Prev": "?" + prev.Encode(), "Types": event.Types(), "Q": q, "Problems": problems,
		"Searched": searched, "ExportCSV": exportURL(d.Name, q, logexport.CSV), "ExportNDJSON": exportURL(d.Name, q, logexport.NDJSON),
	}})
	return nil
}

// logFilter reads the log page's filters (type, recipient, sender,
// subject, tags, start, end); what is wrong is said in problems and left
// out of the filter.
func logFilter(q url.Values, domainID int64) (event.Filter, []string) {
	f := event.Filter{DomainID: domainID, Recipient: strings.TrimSpace(q.Get("recipient")),
		Sender: strings.TrimSpace(q.Get("sender")), Subject: q.Get("subject"), Tags: q.Get("tags")}
	var problems []string
	if t := q.Get("type"); t != "" {
		if f.Type = event.Type(t); !f.Type.Valid() {
			problems = append(problems, "Unknown event type "+strconv.Quote(t)+".")
			f.Type = ""
		}
	}
	f.Start, f.End, problems = timeRange(q, problems)
	if !f.Start.IsZero() && !f.End.IsZero() && f.End.Before(f.Start) {
		problems = append(problems, "The end is before the start.")
		f.Start, f.End = time.Time{}, time.Time{}
	}
	return f, problems
}

// chainPage is a message's page: its content as rebuilt for one
// recipient (messageCopy), and its whole chain (send → queued →
// delivered, opened ...) for every recipient, oldest first, with the SMTP
// answers.
func (c *Console) chainPage(w http.ResponseWriter, r *http.Request, s *account.Session) error {
	d, err := c.deps.Domains.Owned(r.Context(), s.AccountID, r.PathValue("name"))
	if err != nil {
		return err
	}
	id := r.PathValue("id")
	pg, err := c.deps.Events.List(r.Context(), event.Filter{DomainID: d.ID, MessageID: id, Limit: 1000})
	if err != nil {
		return err
	}
	if len(pg.Entries) == 0 {
		return apperr.Errorf(apperr.NotFound, "no message %s", id)
	}
	entries := pg.Entries
	for i, j := 0, len(entries)-1; i < j; i, j = i+1, j-1 { // oldest first
		entries[i], entries[j] = entries[j], entries[i]
	}
	states, deliverAt := c.messageStates(r, d, id)
	cancellable := false
	for _, st := range states {
		cancellable = cancellable || st.Cancellable
	}
	content, err := c.messageCopy(r, s, d, id)
	if err != nil {
		return err
	}
	c.render(w, r, http.StatusOK, "chain", view{Title: "Message " + id, Session: s,
		Data: map[string]any{"Domain": d, "MessageID": id, "Entries": entries, "States": states, "DeliverAt": deliverAt,
			"Cancellable": cancellable, "Content": content}})
	return nil
}

// timeRange reads a filter form's start and end, datetime-local inputs
// read as UTC; what does not parse is left zero and said in problems.
func timeRange(q url.Values, problems []string) (start, end time.Time, _ []string) {
	for _, b := range []struct {
		name string
		dst  *time.Time
	}{{"start", &start}, {"end", &end}} {
		if v := q.Get(b.name); v != "" {
			t, err := time.ParseInLocation("2006-01-02T15:04", v, time.UTC)
			if err != nil {
				problems = append(problems, "The "+b.name+" must be a date and time (YYYY-MM-DDTHH:MM, UTC).")
				continue
			}
			*b.dst = t
		}
	}
	return start, end, problems
}

// pageNumber reads a list's page (1 to max, default 1); another value is
// said in problems and reads as 1.
func pageNumber(q url.Values, max int, problems []string) (int, []string) {
	p := q.Get("page")
	if p == "" {
		return 1, problems
	}
	n, err := strconv.Atoi(p)
	if err != nil || n < 1 || n > max {
		return 1, append(problems, fmt.Sprintf("The page must be a number from 1 to %d.", max))
	}
	return n, problems
}
