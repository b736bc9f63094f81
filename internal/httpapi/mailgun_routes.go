package httpapi

import (
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"

	"github.com/postline/postline/internal/account"
	"github.com/postline/postline/internal/apperr"
	"github.com/postline/postline/internal/inboundroute"
)

// Mailgun's Routes API (/v3/routes) over the account's inbound routes,
// in Mailgun's shapes. GET and DELETE /v3/routes/{id} overlap patterns
// of a domain's lists (/v3/{domain}/events, /v3/{domain}/templates ...),
// so they hang as alts under those (mgRouteAlt); PUT has no rival.

// mgRoute is a route's Mailgun shape; created_at as Mailgun writes it
// ("Wed, 15 Feb 2012 13:03:31 GMT").
func mgRoute(d inboundroute.Definition) map[string]any {
	v := routeView(d)
	return map[string]any{"id": v.ID, "priority": v.Priority, "description": v.Description, "expression": v.Expression,
		"actions": v.Actions, "created_at": d.CreatedAt.UTC().Format(http.TimeFormat)}
}

// mgRouteAlt serves method /v3/routes/{id} from under a pattern whose
// {domain} took "routes"; idOf reads the id from that pattern.
func (s *Server) mgRouteAlt(method string, handler authedHandler, idOf func(r *http.Request) string) alt {
	return alt{route: route{method: method, path: "/v3/routes/{id}", group: groupMailgun, scope: account.ScopeDomains, handler: handler},
		take: func(r *http.Request) bool {
			if r.PathValue("domain") != "routes" {
				return false
			}
			r.SetPathValue("id", idOf(r))
			r.SetPathValue("domain", "") // no domain: the key's domain limits are the handler's to judge
			return true
		}}
}

// pathValue reads a path value by name; literal returns a fixed segment.
func pathValue(name string) func(r *http.Request) string {
	return func(r *http.Request) string { return r.PathValue(name) }
}

func literal(seg string) func(r *http.Request) string {
	return func(*http.Request) string { return seg }
}

// mgRouteErr names a route's fields as Mailgun's parameters: actions[i]
// is action[i], the repeated form field.
func mgRouteErr(err error) error {
	e, ok := apperr.As(err)
	if !ok || len(e.Fields) == 0 {
		return err
	}
	out := *e
	out.Fields = map[string][]string{}
	for f, problems := range e.Fields {
		if f == "actions" || strings.HasPrefix(f, "actions[") {
			f = "action" + strings.TrimPrefix(f, "actions")
		}
		out.Fields[f] = problems
	}
	return &out
}

// mgRouteChange reads the form fields given: priority, description,
// expression and action (repeated).
func mgRouteChange(form url.Values) (inboundroute.Change, error) {
	var c inboundroute.Change
	if v, ok := form["priority"]; ok {
		n, err := strconv.Atoi(strings.TrimSpace(v[0]))
		if err != nil {
			return c, apperr.Field("priority", "The priority must be an integer from 0 to 2147483647 (lower is evaluated first).")
		}
		c.Priority = &n
	}
	if v, ok := form["description"]; ok {
		c.Description = &v[0]
	}
	if v, ok := form["expression"]; ok {
		c.Expression = &v[0]
	}
	if v, ok := form["action"]; ok {
		c.Actions = v
	}
	return c, nil
}

// handleMGRoutes is GET /v3/routes: a page of the account's routes in
// evaluation order (skip, limit) and how many it has.
func (s *Server) handleMGRoutes(w http.ResponseWriter, r *http.Request, p account.Principal) error {
	if err := routesAllowed(p); err != nil {
		return err
	}
	skip, limit, err := routePage(r, "skip", "limit")
	if err != nil {
		return err
	}
	list, total, err := s.InboundRoutes.List(r.Context(), p.AccountID, skip, limit)
	if err != nil {
		return err
	}
	items := make([]map[string]any, len(list))
	for i, d := range list {
		items[i] = mgRoute(d)
	}
	writeJSON(w, http.StatusOK, map[string]any{"total_count": total, "items": items})
	return nil
}

// handleMGRouteCreate is POST /v3/routes.
func (s *Server) handleMGRouteCreate(w http.ResponseWriter, r *http.Request, p account.Principal) error {
	if err := routesAllowed(p); err != nil {
		return err
	}
	form, err := readMGWebhookForm(r, "priority", "description", "expression", "action")
	if err != nil {
		return err
	}
	c, err := mgRouteChange(form)
	if err != nil {
		return err
	}
	d, err := s.InboundRoutes.Create(r.Context(), p.AccountID, c)
	if err != nil {
		return mgRouteErr(err)
	}
	writeJSON(w, http.StatusOK, map[string]any{"message": "Route has been created", "route": mgRoute(d)})
	return nil
}

// handleMGRoute is GET /v3/routes/{id}, and GET /v3/routes/match.
func (s *Server) handleMGRoute(w http.ResponseWriter, r *http.Request, p account.Principal) error {
	if err := routesAllowed(p); err != nil {
		return err
	}
	id := r.PathValue("id")
	if id == "match" {
		return s.handleMGRouteMatch(w, r, p)
	}
	d, err := s.InboundRoutes.Get(r.Context(), p.AccountID, id)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, map[string]any{"route": mgRoute(d)})
	return nil
}

// handleMGRouteMatch is GET /v3/routes/match?address=: the first route,
// in evaluation order, that takes the address: one whose match_recipient
// filters match it, or a catch_all() (which matches when no earlier route
// did). Routes with match_header are passed over: the headers decide
// them.
func (s *Server) handleMGRouteMatch(w http.ResponseWriter, r *http.Request, p account.Principal) error {
	addr := strings.TrimSpace(r.URL.Query().Get("address"))
	if addr == "" {
		return apperr.Field("address", "The address is required.")
	}
	routes, _, err := s.InboundRoutes.Routes(r.Context(), p.AccountID)
	if err != nil {
		return err
	}
	var m inboundroute.Meter
	for _, rt := range routes {
		if !rt.DecidesOnRecipient() {
			continue
		}
		ok, _ := rt.MatchRecipientWithin(addr, &m)
		if m.Spent() {
			return apperr.Field("address", fmt.Sprintf("The routes cost too much to match against this address (at most %d RE2 instructions times bytes).",
				inboundroute.MaxMatchCost))
		}
		if ok {
			d, err := s.InboundRoutes.Get(r.Context(), p.AccountID, rt.ID)
			if err != nil {
				return err
			}
			writeJSON(w, http.StatusOK, map[string]any{"route": mgRoute(d)})
			return nil
		}
	}
	return apperr.Errorf(apperr.NotFound, "No route matches %s", addr)
}

// handleMGRouteUpdate is PUT /v3/routes/{id}: the fields given replace
// the route's. The answer is the route's fields with the message, as
// mailgun.js reads it, and the route under "route", as Mailgun's
// reference shows it.
func (s *Server) handleMGRouteUpdate(w http.ResponseWriter, r *http.Request, p account.Principal) error {
	if err := routesAllowed(p); err != nil {
		return err
	}
	form, err := readMGWebhookForm(r, "id", "priority", "description", "expression", "action")
	if err != nil {
		return err
	}
	id := r.PathValue("id")
	if v, ok := form["id"]; ok && v[0] != id {
		return apperr.Field("id", "The id of the form must be the path's, or left out.")
	}
	c, err := mgRouteChange(form)
	if err != nil {
		return err
	}
	d, err := s.InboundRoutes.Update(r.Context(), p.AccountID, id, c)
	if err != nil {
		return mgRouteErr(err)
	}
	out := mgRoute(d)
	out["route"] = mgRoute(d)
	out["message"] = "Route has been updated"
	writeJSON(w, http.StatusOK, out)
	return nil
}

// handleMGRouteDelete is DELETE /v3/routes/{id}.
func (s *Server) handleMGRouteDelete(w http.ResponseWriter, r *http.Request, p account.Principal) error {
	if err := routesAllowed(p); err != nil {
		return err
	}
	id := r.PathValue("id")
	if err := s.InboundRoutes.Delete(r.Context(), p.AccountID, id); err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, map[string]any{"message": "Route has been deleted", "id": id})
	return nil
}
