package console

import (
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/postline/postline/internal/account"
	"github.com/postline/postline/internal/apperr"
	"github.com/postline/postline/internal/sending"
	"github.com/postline/postline/internal/shaping"
	"github.com/postline/postline/internal/suspend"
)

// queueControl adds to the operator page's data what queue control shows:
// the suspensions in force, and the queue by account or site when asked
// (?by=account, ?by=site: the site listing looks MX hosts up, so it is
// not the default).
func (c *Console) queueControl(r *http.Request, data map[string]any) error {
	list, err := c.deps.Queue.Suspensions(r.Context())
	if err != nil {
		return err
	}
	data["Suspensions"] = list
	data["Actions"] = automationActions(list)
	hist, err := c.deps.Queue.AutomationHistory(r.Context())
	if err != nil {
		return err
	}
	data["History"] = automationHistory(hist, c.deps.Queue.Now())
	held := map[string]bool{}
	for _, sp := range list {
		if sp.Kind == suspend.Domain {
			held[sp.Value] = true
		}
	}
	data["HeldDomains"] = held
	by := suspend.Kind(r.URL.Query().Get("by"))
	if by == suspend.Account || by == suspend.Site {
		groups, err := c.deps.Queue.Groups(r.Context(), by)
		if err != nil {
			return err
		}
		data["By"], data["Groups"] = string(by), groups
	}
	data["Kinds"] = suspend.Kinds
	return nil
}

// automationAction is one automation action in force, as the operator
// page lists it.
type automationAction struct {
	suspend.Suspension
	Site string
}

// automationActions are the suspensions automation rules put in force.
func automationActions(list []suspend.Suspension) []automationAction {
	var out []automationAction
	for _, sp := range list {
		if sp.CreatedBy == suspend.ByAutomation {
			out = append(out, automationAction{Suspension: sp, Site: sending.ActionSite(sp)})
		}
	}
	return out
}

// historyEntry is one automation action of the last 7 days, as the
// operator page lists it: Ended and EndedAt say how and when it ended
// ("" while in force).
type historyEntry struct {
	automationAction
	Ended   string
	EndedAt time.Time
}

// automationHistory is the history as the operator page lists it.
func automationHistory(list []suspend.Suspension, now time.Time) []historyEntry {
	out := make([]historyEntry, len(list))
	for i, sp := range list {
		out[i] = historyEntry{automationAction: automationAction{Suspension: sp, Site: sending.ActionSite(sp)}}
		if at, how, ok := sp.End(now); ok {
			out[i].Ended, out[i].EndedAt = how, at
		}
	}
	return out
}

// adminSuspend suspends a site, a sending domain or an account from the
// operator page's form (kind, value, duration, reason).
func (c *Console) adminSuspend(w http.ResponseWriter, r *http.Request, s *account.Session) error {
	kind := suspend.Kind(r.PostFormValue("kind"))
	if !slices.Contains(suspend.Kinds, kind) {
		return c.renderAdmin(w, r, s, http.StatusUnprocessableEntity, map[string][]string{"value": {"Choose a site, a domain or an account."}})
	}
	req := suspend.Request{Kind: kind, Value: r.PostFormValue("value"), Reason: r.PostFormValue("reason"), By: s.Login}
	if d := strings.TrimSpace(r.PostFormValue("duration")); d != "" {
		var err error
		if req.Duration, err = shaping.ParseDuration(d); err != nil {
			return c.renderAdmin(w, r, s, http.StatusUnprocessableEntity, map[string][]string{"duration": {err.Error()}})
		}
	}
	sp, err := c.deps.Queue.Suspend(r.Context(), req)
	if e, ok := apperr.As(err); ok && (e.Code == apperr.Invalid || e.Code == apperr.NotFound) {
		status, fields := http.StatusUnprocessableEntity, map[string][]string{}
		for f, problems := range e.Fields {
			if f != "duration" && f != "reason" {
				f = "value"
			}
			fields[f] = problems
		}
		if e.Code == apperr.NotFound {
			status, fields["value"] = http.StatusNotFound, []string{"No " + string(kind) + " has that name."}
		}
		return c.renderAdmin(w, r, s, status, fields)
	}
	if err != nil {
		return err
	}
	until := "until resumed"
	if sp.Until != nil {
		until = "until " + sp.Until.UTC().Format("2006-01-02 15:04:05 UTC")
	}
	c.redirect(w, r, "/admin", flash{Notice: "Deliveries of " + string(sp.Kind) + " " + sp.Value + " wait " + until + "."})
	return nil
}

// adminResume ends a suspension; its deliveries are due at once.
func (c *Console) adminResume(w http.ResponseWriter, r *http.Request, s *account.Session) error {
	id, err := strconv.ParseInt(r.PathValue("id"), 10, 64)
	if err != nil {
		return apperr.Errorf(apperr.NotFound, "Suspension not found")
	}
	sp, err := c.deps.Queue.Resume(r.Context(), id)
	if err != nil {
		return err
	}
	c.redirect(w, r, "/admin", flash{Notice: "Deliveries of " + string(sp.Kind) + " " + sp.Value + " are due again."})
	return nil
}
