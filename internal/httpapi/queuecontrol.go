package httpapi

import (
	"fmt"
	"net/http"
	"strconv"
	"strings"

	"github.com/postline/postline/internal/account"
	"github.com/postline/postline/internal/apperr"
	"github.com/postline/postline/internal/delivery"
	"github.com/postline/postline/internal/sending"
	"github.com/postline/postline/internal/shaping"
	"github.com/postline/postline/internal/suspend"
)

// selectorJSON is the selector of the queue's control routes: at most one
// of site, domain (a sending domain) and account (a login).
type selectorJSON struct {
	Site    *string `json:"site"`
	Domain  *string `json:"domain"`
	Account *string `json:"account"`
}

// selector returns the one selector given; none is the zero Selector
// unless required.
func (j selectorJSON) selector(required bool) (sending.Selector, error) {
	var sel sending.Selector
	var given []string
	for _, f := range []struct {
		kind suspend.Kind
		v    *string
	}{{suspend.Site, j.Site}, {suspend.Domain, j.Domain}, {suspend.Account, j.Account}} {
		if f.v != nil {
			given = append(given, string(f.kind))
			sel = sending.Selector{Kind: f.kind, Value: *f.v}
		}
	}
	switch {
	case len(given) > 1:
		fe := apperr.FieldErrors{}
		for _, g := range given {
			fe.Add(g, "give one of site, domain or account")
		}
		return sel, fe.Err()
	case len(given) == 0 && required:
		return sel, apperr.Field("selector", "give one of site, domain or account")
	}
	return sel, nil
}

type suspensionJSON struct {
	ID        int64   `json:"id"`
	Kind      string  `json:"kind"`
	Value     string  `json:"value"`
	Reason    string  `json:"reason"`
	CreatedAt string  `json:"created_at"`
	Until     *string `json:"until"`
	CreatedBy string  `json:"created_by"`
}

func suspensionView(sp suspend.Suspension) suspensionJSON {
	v := suspensionJSON{ID: sp.ID, Kind: string(sp.Kind), Value: sp.Value, Reason: sp.Reason, CreatedAt: timeJSON(sp.CreatedAt),
		CreatedBy: sp.CreatedBy}
	if sp.Until != nil {
		t := timeJSON(*sp.Until)
		v.Until = &t
	}
	return v
}

// queueGroups is the listing ?by=site|domain|account adds to GET
// /api/admin/queue.
func (s *Server) queueGroups(r *http.Request, by string) ([]map[string]any, error) {
	groups, err := s.Queue.Groups(r.Context(), suspend.Kind(by))
	if err != nil {
		return nil, err
	}
	out := make([]map[string]any, len(groups))
	for i, g := range groups {
		m := map[string]any{"name": g.Name, "pending": g.Pending, "deferred": g.Deferred, "sending": g.Sending, "held": g.Held,
			"suspension": nil}
		if g.Suspension != nil {
			m["suspension"] = suspensionView(*g.Suspension)
		}
		if by == string(suspend.Site) {
			m["provider"], m["limits"] = nil, nil
			if sh := g.Shaping; sh != nil {
				if sh.Provider != "" {
					m["provider"] = sh.Provider
				}
				m["limits"] = limitsView(*sh)
			}
		}
		out[i] = m
	}
	return out, nil
}

// limitsView is a site's effective limits in the listing by site: counts
// as numbers, rates as shaping files write them, null where none applies,
// and the keys a SetConfig override in force sets.
func limitsView(sh delivery.SiteShaping) map[string]any {
	m := map[string]any{}
	overridden := []string{}
	for _, v := range sh.Shown() {
		var val any
		switch {
		case v.Value == "":
		case strings.HasSuffix(v.Key, "_rate"):
			val = v.Value
		default:
			n, err := strconv.Atoi(strings.TrimPrefix(v.Value, "local:"))
			if err != nil {
				val = v.Value
			} else {
				val = n
			}
		}
		m[v.Key] = val
		if v.Overridden {
			overridden = append(overridden, v.Key)
		}
	}
	m["overridden"] = overridden
	return m
}

func (s *Server) handleAdminSuspensions(w http.ResponseWriter, r *http.Request, _ account.Principal) error {
	list, err := s.Queue.Suspensions(r.Context())
	if err != nil {
		return err
	}
	out := make([]suspensionJSON, len(list))
	for i, sp := range list {
		out[i] = suspensionView(sp)
	}
	writeJSON(w, http.StatusOK, map[string]any{"success": true, "data": out})
	return nil
}

func (s *Server) handleAdminSuspend(w http.ResponseWriter, r *http.Request, p account.Principal) error {
	var in struct {
		selectorJSON
		Duration *string `json:"duration"`
		Reason   string  `json:"reason"`
	}
	if err := decodeJSON(r, &in); err != nil {
		return err
	}
	sel, err := in.selector(true)
	if err != nil {
		return err
	}
	req := suspend.Request{Kind: sel.Kind, Value: sel.Value, Reason: in.Reason, By: p.Login}
	if in.Duration != nil && strings.TrimSpace(*in.Duration) != "" {
		if req.Duration, err = shaping.ParseDuration(*in.Duration); err != nil {
			return apperr.Field("duration", err.Error())
		}
	}
	sp, err := s.Queue.Suspend(r.Context(), req)
	if err != nil {
		return err
	}
	msg := fmt.Sprintf("Deliveries of %s %s wait until resumed.", sp.Kind, sp.Value)
	if sp.Until != nil {
		msg = fmt.Sprintf("Deliveries of %s %s wait until %s, or until resumed.", sp.Kind, sp.Value, timeJSON(*sp.Until))
	}
	writeJSON(w, http.StatusCreated, map[string]any{"success": true, "message": msg, "data": suspensionView(sp)})
	return nil
}

func (s *Server) handleAdminResume(w http.ResponseWriter, r *http.Request, _ account.Principal) error {
	id, err := strconv.ParseInt(r.PathValue("id"), 10, 64)
	if err != nil {
		return apperr.Errorf(apperr.NotFound, "Suspension not found")
	}
	sp, err := s.Queue.Resume(r.Context(), id)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, map[string]any{"success": true,
		"message": fmt.Sprintf("Resumed: deliveries of %s %s are due now.", sp.Kind, sp.Value), "data": suspensionView(sp)})
	return nil
}

func (s *Server) handleAdminBounce(w http.ResponseWriter, r *http.Request, _ account.Principal) error {
	var in struct {
		selectorJSON
		Reason string `json:"reason"`
	}
	if err := decodeJSON(r, &in); err != nil {
		return err
	}
	sel, err := in.selector(true)
	if err != nil {
		return err
	}
	n, err := s.Queue.Bounce(r.Context(), sel, in.Reason)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, map[string]any{"success": true, "message": fmt.Sprintf("%d queued deliveries failed.", n),
		"data": map[string]any{"bounced": n}})
	return nil
}
