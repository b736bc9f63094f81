package httpapi

import (
	"cmp"
	"fmt"
	"net/http"
	"strconv"

	"github.com/postline/postline/internal/account"
	"github.com/postline/postline/internal/apperr"
	"github.com/postline/postline/internal/inboundroute"
)

// Inbound routes are the account's, not a domain's: the receiving side
// evaluates an account's routes only for recipients at that account's own
// inbound domains, so a pattern naming anyone else's domain never sees
// its mail, and catch_all() covers the account's domains alone.

type routeJSON struct {
	ID          string   `json:"id"`
	Priority    int      `json:"priority"`
	Description string   `json:"description"`
	Expression  string   `json:"expression"`
	Actions     []string `json:"actions"`
	Format      string   `json:"format"`
	CreatedAt   string   `json:"created_at"`
}

func routeView(d inboundroute.Definition) routeJSON {
	actions := d.Actions
	if actions == nil {
		actions = []string{}
	}
	return routeJSON{ID: d.ID, Priority: d.Priority, Description: d.Description, Expression: d.Expression,
		Actions: actions, Format: cmp.Or(d.Format, inboundroute.FormatMailgun), CreatedAt: timeJSON(d.CreatedAt)}
}

// routesAllowed refuses a key limited to domains: a route applies to
// every inbound domain of the account, so changing or reading them is
// beyond such a key.
func routesAllowed(p account.Principal) error {
	if p.Domains != nil {
		return apperr.Errorf(apperr.Forbidden, "Routes apply to every domain of the account: they need a key that is not limited to domains")
	}
	return nil
}

// routeChangeJSON is the body of POST and PUT /api/routes: fields left
// out are not given (PUT keeps them).
type routeChangeJSON struct {
	Priority    *int      `json:"priority"`
	Description *string   `json:"description"`
	Expression  *string   `json:"expression"`
	Actions     *[]string `json:"actions"`
	Format      *string   `json:"format"`
}

func (in routeChangeJSON) change() inboundroute.Change {
	c := inboundroute.Change{Priority: in.Priority, Description: in.Description, Expression: in.Expression, Format: in.Format}
	if in.Actions != nil {
		c.Actions = *in.Actions
	}
	return c
}

func (s *Server) handleCreateRoute(w http.ResponseWriter, r *http.Request, p account.Principal) error {
	if err := routesAllowed(p); err != nil {
		return err
	}
	var in routeChangeJSON
	if err := decodeJSON(r, &in); err != nil {
		return err
	}
	d, err := s.InboundRoutes.Create(r.Context(), p.AccountID, in.change())
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusCreated, map[string]any{"success": true, "message": "Route created.", "data": routeView(d)})
	return nil
}

// Paging of GET /api/routes.
const (
	routesDefaultLimit = 100
	routesMaxLimit     = inboundroute.MaxPerAccount
)

func (s *Server) handleListRoutes(w http.ResponseWriter, r *http.Request, p account.Principal) error {
	if err := routesAllowed(p); err != nil {
		return err
	}
	offset, limit, err := routePage(r, "offset", "limit")
	if err != nil {
		return err
	}
	list, total, err := s.InboundRoutes.List(r.Context(), p.AccountID, offset, limit)
	if err != nil {
		return err
	}
	out := make([]routeJSON, len(list))
	for i, d := range list {
		out[i] = routeView(d)
	}
	writeJSON(w, http.StatusOK, map[string]any{"success": true, "data": out, "count": total, "offset": offset, "limit": limit})
	return nil
}

// routePage reads the offset and limit parameters (named as the API
// names them), within their bounds.
func routePage(r *http.Request, offsetName, limitName string) (int, int, error) {
	q := r.URL.Query()
	offset, limit := 0, routesDefaultLimit
	fe := apperr.FieldErrors{}
	if v := q.Get(offsetName); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 0 || n > routesMaxLimit {
			fe.Add(offsetName, fmt.Sprintf("The %s must be an integer from 0 to %d.", offsetName, routesMaxLimit))
		}
		offset = n
	}
	if v := q.Get(limitName); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 || n > routesMaxLimit {
			fe.Add(limitName, fmt.Sprintf("The %s must be an integer from 1 to %d.", limitName, routesMaxLimit))
		}
		limit = n
	}
	return offset, limit, fe.Err()
}

func (s *Server) handleGetRoute(w http.ResponseWriter, r *http.Request, p account.Principal) error {
	if err := routesAllowed(p); err != nil {
		return err
	}
	d, err := s.InboundRoutes.Get(r.Context(), p.AccountID, r.PathValue("id"))
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, map[string]any{"success": true, "data": routeView(d)})
	return nil
}

func (s *Server) handleUpdateRoute(w http.ResponseWriter, r *http.Request, p account.Principal) error {
	if err := routesAllowed(p); err != nil {
		return err
	}
	var in routeChangeJSON
	if err := decodeJSON(r, &in); err != nil {
		return err
	}
	d, err := s.InboundRoutes.Update(r.Context(), p.AccountID, r.PathValue("id"), in.change())
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, map[string]any{"success": true, "message": "Route updated.", "data": routeView(d)})
	return nil
}

func (s *Server) handleDeleteRoute(w http.ResponseWriter, r *http.Request, p account.Principal) error {
	if err := routesAllowed(p); err != nil {
		return err
	}
	id := r.PathValue("id")
	if err := s.InboundRoutes.Delete(r.Context(), p.AccountID, id); err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, map[string]any{"success": true, "message": fmt.Sprintf("Route %s removed.", id)})
	return nil
}
