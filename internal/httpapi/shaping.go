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

// handleAdminShaping is GET /api/admin/shaping: the automation actions in
// force, oldest first.
func (s *Server) handleAdminShaping(w http.ResponseWriter, r *http.Request, _ account.Principal) error {
	list, err := s.Queue.AutomationActions(r.Context())
	if err != nil {
		return err
	}
	out := make([]shapingActionJSON, len(list))
	for i, sp := range list {
		out[i] = shapingActionView(sp)
	}
	writeJSON(w, http.StatusOK, map[string]any{"success": true, "data": out})
	return nil
}
