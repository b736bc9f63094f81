package console

import (
	"net/http"
	"strings"

	"github.com/postline/postline/internal/account"
	"github.com/postline/postline/internal/apperr"
	"github.com/postline/postline/internal/audit"
)

// adminOnly shows non-operators a 403 page.
func (c *Console) adminOnly(fn pageFunc) pageFunc {
	return func(w http.ResponseWriter, r *http.Request, s *account.Session) error {
		if !s.Admin {
			c.render(w, r, http.StatusForbidden, "notfound", view{Title: "Operators only", Session: s,
				Data: map[string]any{"Message": "This page is for operator accounts (postline user create --admin)."}})
			return nil
		}
		return fn(w, r, s)
	}
}

// adminPage is the operator's view: every account, the queue across
// every domain, "retry now", and the queue's suspensions (queuecontrol.go).
func (c *Console) adminPage(w http.ResponseWriter, r *http.Request, s *account.Session) error {
	return c.renderAdmin(w, r, s, http.StatusOK, nil)
}

func (c *Console) renderAdmin(w http.ResponseWriter, r *http.Request, s *account.Session, status int, fieldErr map[string][]string) error {
	users, err := c.deps.Accounts.Users(r.Context())
	if err != nil {
		return err
	}
	counts, err := c.deps.Queue.Counts(r.Context())
	if err != nil {
		return err
	}
	type row struct {
		Domain                     string
		Queued, Deferred, InFlight int
		Oldest                     string
	}
	var rows []row
	var total row
	for _, q := range counts {
		name := "?"
		if d, err := c.deps.Domains.ByID(r.Context(), q.DomainID); err == nil {
			name = d.Name
		}
		rr := row{Domain: name, Queued: q.Queued, Deferred: q.Deferred, InFlight: q.InFlight}
		if q.OldestDeferred != nil {
			rr.Oldest = q.OldestDeferred.UTC().Format("2006-01-02T15:04:05Z")
		}
		rows = append(rows, rr)
		total.Queued, total.Deferred, total.InFlight = total.Queued+q.Queued, total.Deferred+q.Deferred, total.InFlight+q.InFlight
	}
	data := map[string]any{"Users": users, "Queue": rows, "Total": total, "Errors": fieldErr}
	if err := c.queueControl(r, data); err != nil {
		return err
	}
	if login := r.URL.Query().Get("keys"); login != "" {
		keys, err := c.deps.Accounts.Keys(r.Context(), login)
		if err != nil {
			return err
		}
		data["KeysOf"], data["Keys"] = login, keys
	}
	c.render(w, r, status, "admin", view{Title: "Operator", Session: s, Data: data})
	return nil
}

func (c *Console) adminCreateAccount(w http.ResponseWriter, r *http.Request, s *account.Session) error {
	login := strings.TrimSpace(r.PostFormValue("login"))
	if err := account.CheckLogin(login); err != nil {
		return c.renderAdmin(w, r, s, http.StatusUnprocessableEntity, map[string][]string{"login": {err.Error()}})
	}
	if _, err := c.deps.Accounts.CreateUser(r.Context(), login); err != nil {
		if apperr.CodeOf(err) == apperr.Conflict {
			return c.renderAdmin(w, r, s, http.StatusConflict, map[string][]string{"login": {"That login exists."}})
		}
		return err
	}
	if r.PostFormValue("admin") == "on" {
		if err := c.deps.Accounts.SetAdmin(r.Context(), login, true); err != nil {
			return err
		}
	}
	c.redirect(w, r, "/admin", flash{Notice: "Account " + login + " created; give it a key with postline key create or POST /api/admin/accounts/" + login + "/keys."})
	return nil
}

func (c *Console) adminSetDisabled(disable bool) pageFunc {
	return func(w http.ResponseWriter, r *http.Request, s *account.Session) error {
		login := r.PathValue("login")
		var err error
		if disable {
			err = c.deps.Accounts.DisableUser(r.Context(), login)
		} else {
			err = c.deps.Accounts.EnableUser(r.Context(), login)
		}
		if apperr.CodeOf(err) == apperr.Conflict { // the last enabled operator
			return c.renderAdmin(w, r, s, http.StatusConflict, map[string][]string{"accounts": {apperrMessage(err)}})
		}
		if err != nil {
			return err
		}
		what, action := "enabled: its keys that were not revoked work again.", audit.AccountEnabled
		if disable {
			what, action = "disabled: its keys and console sessions no longer work.", audit.AccountDisabled
		}
		if a, err := c.deps.Accounts.User(r.Context(), login); err == nil && c.deps.Audit != nil { // in the account's own log
			c.deps.Audit.Record(r.Context(), audit.Entry{AccountID: a.ID, Actor: "operator " + s.Actor(""), Action: action,
				Target: login, Client: clientIP(r)})
		}
		c.redirect(w, r, "/admin", flash{Notice: "Account " + login + " " + what})
		return nil
	}
}

func (c *Console) adminRetry(w http.ResponseWriter, r *http.Request, s *account.Session) error {
	n, err := c.deps.Queue.RetryNow(r.Context(), 0)
	if err != nil {
		return err
	}
	c.redirect(w, r, "/admin", flash{Notice: pluralDeliveries(n) + " made due now."})
	return nil
}

func pluralDeliveries(n int64) string {
	return plural(n, "deferred delivery", "deferred deliveries")
}
