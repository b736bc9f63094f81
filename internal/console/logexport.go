package console

import (
	"context"
	"net/http"
	"net/url"
	"strings"

	"github.com/postline/postline/internal/account"
	"github.com/postline/postline/internal/logexport"
)

// logExport downloads the log page's entries (its filters, every page) as
// CSV or NDJSON, oldest first, streamed (package logexport). A filter the
// page would leave out is refused here: a file must hold what was asked.
func (c *Console) logExport(w http.ResponseWriter, r *http.Request, s *account.Session) error {
	d, err := c.deps.Domains.Owned(r.Context(), s.AccountID, r.PathValue("name"))
	if err != nil {
		return err
	}
	q := r.URL.Query()
	f, problems := logFilter(q, d.ID)
	// The page's search box filters its export too (its link carries q).
	if _, _, err := c.logSearch(r, d, q.Get("q"), &f); err != nil {
		return err
	}
	format, err := logexport.ParseFormat(q.Get("format"))
	if err != nil {
		problems = append(problems, "The format must be csv or ndjson.")
	}
	if len(problems) > 0 {
		c.render(w, r, http.StatusBadRequest, "notfound", view{Title: "Bad export", Session: s,
			Data: map[string]any{"Message": strings.Join(problems, " ")}})
		return nil
	}
	ctx, cancel := context.WithCancel(r.Context())
	defer cancel()
	defer context.AfterFunc(c.streams, cancel)() // ends at shutdown, as the live tails do
	return c.deps.LogExports.Serve(w, r.WithContext(ctx), logexport.Params{AccountID: s.AccountID, Domain: d.Name, Filter: f, Format: format})
}

// exportURL is the export of the log page q shows, in format f: its
// filters and its search box.
func exportURL(domain string, q url.Values, f logexport.Format) string {
	v := url.Values{}
	for _, k := range []string{"type", "recipient", "sender", "subject", "tags", "start", "end", "q"} {
		if x := q.Get(k); x != "" {
			v.Set(k, x)
		}
	}
	v.Set("format", string(f))
	return "/domains/" + url.PathEscape(domain) + "/log/export?" + v.Encode()
}
