package console

import (
	"net/http"
	"strings"

	"github.com/postline/postline/internal/domain"
	"github.com/postline/postline/internal/emailaddr"
	"github.com/postline/postline/internal/event"
)

// logSearch reads the log page's one search box (q) into f. A Message-ID
// of the domain's (an @ and no space, angle brackets optional) gives its
// page to go to; an address that is not one filters by recipient; any
// other text by subject. note says what the box did, for the page.
func (c *Console) logSearch(r *http.Request, d domain.Domain, q string, f *event.Filter) (goTo, note string, err error) {
	q = strings.TrimSpace(q)
	if q == "" {
		return "", "", nil
	}
	id := strings.TrimSuffix(strings.TrimPrefix(q, "<"), ">")
	if strings.Contains(id, "@") && !strings.ContainsAny(id, " \t<>") {
		pg, err := c.deps.Events.List(r.Context(), event.Filter{DomainID: d.ID, MessageID: id, Limit: 1})
		if err != nil {
			return "", "", err
		}
		if len(pg.Entries) > 0 {
			f.MessageID = id // the export of the search: that message's entries
			return messagePath(d, id), "", nil
		}
		if _, err := emailaddr.Parse(id); err == nil && id == q {
			f.Recipient = id
			return "", "Entries whose recipient is " + id + " (no message has that Message-ID).", nil
		}
		f.MessageID = id
		return "", "No message has the Message-ID <" + id + ">.", nil
	}
	f.Subject = q
	return "", "Entries whose subject contains “" + q + "”.", nil
}
