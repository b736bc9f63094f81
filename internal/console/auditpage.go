package console

import (
	"net/http"
	"strconv"

	"github.com/postline/postline/internal/account"
	"github.com/postline/postline/internal/audit"
)

// auditPage is the account's audit log for its owners, newest first,
// a page of 50 at a time (?before= the last id seen).
func (c *Console) auditPage(w http.ResponseWriter, r *http.Request, s *account.Session) error {
	return c.renderAudit(w, r, s, s.AccountID, "", "/audit")
}

// adminAuditPage is an account's audit log for the operator.
func (c *Console) adminAuditPage(w http.ResponseWriter, r *http.Request, s *account.Session) error {
	a, err := c.deps.Accounts.User(r.Context(), r.PathValue("login"))
	if err != nil {
		return err
	}
	return c.renderAudit(w, r, s, a.ID, a.Login, "/admin/accounts/"+a.Login+"/audit")
}

func (c *Console) renderAudit(w http.ResponseWriter, r *http.Request, s *account.Session, accountID int64, login, path string) error {
	before, _ := strconv.ParseInt(r.URL.Query().Get("before"), 10, 64)
	pg, err := c.deps.Audit.List(r.Context(), audit.Filter{AccountID: accountID, Before: before})
	if err != nil {
		return err
	}
	title := "Audit log"
	if login != "" {
		title = "Audit log · " + login
	}
	c.render(w, r, http.StatusOK, "audit", view{Title: title, Session: s, Data: map[string]any{"Page": pg, "Path": path,
		"First": before == 0}})
	return nil
}
