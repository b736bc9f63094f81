package httpapi

import (
	"math"
	"net"
	"net/http"
	"strconv"
	"strings"

	"github.com/postline/postline/internal/account"
	"github.com/postline/postline/internal/apperr"
	"github.com/postline/postline/internal/audit"
)

// recordAPI writes a successful change made through the API to the
// account's audit log: the actor is the key's name, the target the path
// below /api/.
func (s *Server) recordAPI(w http.ResponseWriter, r *http.Request, rt route, p account.Principal) {
	if s.Audit == nil {
		return
	}
	if sw, ok := w.(*statusWriter); ok && sw.status >= 300 {
		return
	}
	name := "#" + strconv.FormatInt(p.KeyID, 10)
	if k, err := s.Accounts.KeyByID(r.Context(), p.KeyID); err == nil && k.Name != "" {
		name = k.Name
	}
	client, _, err := net.SplitHostPort(r.RemoteAddr)
	if err != nil {
		client = r.RemoteAddr
	}
	s.Audit.Record(r.Context(), audit.Entry{AccountID: p.AccountID, Actor: p.Actor(name), Action: rt.audit,
		Target: strings.TrimPrefix(r.URL.Path, "/api/"), Client: client})
}

// handleAudit answers the caller's audit log, newest first, a page at a
// time (?before=ID of the last entry seen, ?limit up to 500); an operator
// may name another account (?account=LOGIN).
func (s *Server) handleAudit(w http.ResponseWriter, r *http.Request, p account.Principal) error {
	q := r.URL.Query()
	f := audit.Filter{AccountID: p.AccountID}
	if login := q.Get("account"); login != "" && login != p.Login {
		if !p.Admin {
			return apperr.Errorf(apperr.Forbidden, "Only an operator account reads another account's audit log.")
		}
		a, err := s.Accounts.User(r.Context(), login)
		if err != nil {
			return err
		}
		f.AccountID = a.ID
	}
	fe := apperr.FieldErrors{}
	f.Before = int64(intParam(fe, q, "before", 0, 0, math.MaxInt))
	f.Limit = intParam(fe, q, "limit", audit.DefaultLimit, 1, audit.MaxLimit)
	if err := fe.Err(); err != nil {
		return err
	}
	pg, err := s.Audit.List(r.Context(), f)
	if err != nil {
		return err
	}
	out := make([]map[string]any, len(pg.Entries))
	for i, e := range pg.Entries {
		out[i] = map[string]any{"id": e.ID, "at": timeJSON(e.At), "actor": e.Actor, "action": e.Action, "target": e.Target, "client": e.Client}
	}
	var next any
	if pg.Next > 0 {
		next = pg.Next
	}
	writeJSON(w, http.StatusOK, map[string]any{"success": true, "data": out, "next_before": next})
	return nil
}
