package httpapi

import (
	"net/http"

	"github.com/postline/postline/internal/account"
	"github.com/postline/postline/internal/sending"
	"github.com/postline/postline/internal/suspend"
)

// shapingActionJSON is one automation action in force.
type shapingActionJSON struct {
	ID     int64   `json:"id"`
	Site   string  `json:"site"`
	Action string  `json:"action"`
	Kind   string  `json:"kind"`
	Target string  `json:"target"`
	Rule   string  `json:"rule"`
	Reply  string  `json:"reply"`
	Since  string  `json:"since"`
	Until  *string `json:"until"`
}

func shapingActionView(sp suspend.Suspension) shapingActionJSON {
	v := shapingActionJSON{ID: sp.ID, Site: sending.ActionSite(sp), Action: sp.Action, Kind: string(sp.Kind), Target: sp.Value,
		Rule: sp.Rule, Reply: sp.Reply, Since: timeJSON(sp.CreatedAt)}
	if sp.Until != nil {
		t := timeJSON(*sp.Until)
		v.Until = &t
	}
	return v
}

// historyEntryJSON is one action of the history: ended_at and ended
// (expired, resumed, replaced) say when and how it ended, null while it
// is in force.
type historyEntryJSON struct {
	shapingActionJSON
	EndedAt *string `json:"ended_at"`
	Ended   *string `json:"ended"`
}

// handleAdminShaping is GET /api/admin/shaping: the automation actions in
// force, oldest first (data), and the history of the last 7 days, newest
// first (history): every activation, with when and how it ended.
func (s *Server) handleAdminShaping(w http.ResponseWriter, r *http.Request, _ account.Principal) error {
	list, err := s.Queue.AutomationActions(r.Context())
	if err != nil {
		return err
	}
	out := make([]shapingActionJSON, len(list))
	for i, sp := range list {
		out[i] = shapingActionView(sp)
	}
	hist, err := s.Queue.AutomationHistory(r.Context())
	if err != nil {
		return err
	}
	now := s.Queue.Now()
	history := make([]historyEntryJSON, len(hist))
	for i, sp := range hist {
		history[i] = historyEntryJSON{shapingActionJSON: shapingActionView(sp)}
		if at, how, ok := sp.End(now); ok {
			t := timeJSON(at)
			history[i].EndedAt, history[i].Ended = &t, &how
		}
	}
	writeJSON(w, http.StatusOK, map[string]any{"success": true, "data": out, "history": history})
	return nil
}
