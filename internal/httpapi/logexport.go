package httpapi

import (
	"context"
	"net/http"
	"strings"

	"github.com/postline/postline/internal/account"
	"github.com/postline/postline/internal/apperr"
	"github.com/postline/postline/internal/event"
	"github.com/postline/postline/internal/logexport"
)

// handleLogExport is GET /api/domains/{domain}/log/export: the entries the
// list's filters select, oldest first, as a CSV or NDJSON file of any
// size, streamed page by page (package logexport). Errors found before
// the first byte are JSON with their status, as for the stream.
func (s *Server) handleLogExport(w http.ResponseWriter, r *http.Request, p account.Principal) error {
	d, err := s.logDomain(r, p)
	if err != nil {
		return err
	}
	q := r.URL.Query()
	var f event.Filter
	var problems []string
	fe := apperr.FieldErrors{}
	bad := func(field, msg string) { fe.Add(field, msg); problems = append(problems, msg) }
	parseLogFilter(q, event.Types(), &f, bad)
	format, err := logexport.ParseFormat(q.Get("format"))
	if e, ok := apperr.As(err); ok {
		bad("format", e.Message)
	}
	if len(problems) > 0 {
		return fe.ErrMessage(strings.Join(problems, " "))
	}
	f.DomainID = d.ID
	ctx, cancel := context.WithCancel(r.Context())
	defer cancel()
	defer context.AfterFunc(s.streamsCtx, cancel)() // ends at shutdown, as the streams do
	return s.LogExports.Serve(w, r.WithContext(ctx), logexport.Params{AccountID: p.AccountID, Domain: d.Name, Filter: f, Format: format})
}
