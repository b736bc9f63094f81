package httpapi

import (
	"net/http"
	"strconv"

	"github.com/postline/postline/internal/account"
	"github.com/postline/postline/internal/apperr"
	"github.com/postline/postline/internal/domain"
)

// msgLogDomainNotFound is the log endpoints' 404 message, word for word
// from the interface document.
const msgLogDomainNotFound = "Domain not found or not owned by user"

// logDomain returns the path's domain when the caller owns it. Someone
// else's domain and a missing one get the same 404.
func (s *Server) logDomain(r *http.Request, p account.Principal) (domain.Domain, error) {
	d, err := s.Domains.Owned(r.Context(), p.AccountID, r.PathValue("domain"))
	if apperr.CodeOf(err) == apperr.NotFound {
		return d, apperr.Errorf(apperr.NotFound, msgLogDomainNotFound)
	}
	return d, err
}

// handleLogList is GET /api/domains/{domain}/log: one page, newest first,
// in the document's envelope.
func (s *Server) handleLogList(w http.ResponseWriter, r *http.Request, p account.Principal) error {
	d, err := s.logDomain(r, p)
	if err != nil {
		return err
	}
	lq, err := parseLogQuery(r, false)
	if err != nil {
		return err
	}
	f := lq.filter
	f.DomainID = d.ID
	page, entries, err := s.Events.ListJSON(r.Context(), f)
	if err != nil {
		return err
	}
	lastPage := max(1, (page.Total+f.Limit-1)/f.Limit)
	b := make([]byte, 0, 256+len(entries))
	b = append(b, `{"data":`...)
	b = append(b, entries...)
	b = appendIntField(b, `,"count":`, len(page.Entries))
	b = appendIntField(b, `,"offset":`, f.Offset)
	b = appendIntField(b, `,"limit":`, f.Limit)
	b = appendIntField(b, `,"pagination":{"total":`, page.Total)
	b = appendIntField(b, `,"per_page":`, f.Limit)
	b = appendIntField(b, `,"current_page":`, f.Offset/f.Limit+1)
	b = appendIntField(b, `,"last_page":`, lastPage)
	b = append(b, `,"total_exact":`...)
	b = strconv.AppendBool(b, page.Exact)
	b = append(b, "}}\n"...)
	h := w.Header()
	h.Set("Content-Type", "application/json")
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("Content-Length", strconv.Itoa(len(b)))
	w.WriteHeader(http.StatusOK)
	w.Write(b) //nolint:errcheck // the client went away
	return nil
}

func appendIntField(b []byte, prefix string, n int) []byte {
	return strconv.AppendInt(append(b, prefix...), int64(n), 10)
}
