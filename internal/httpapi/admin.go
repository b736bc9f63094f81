package httpapi

import (
	"net/http"

	"github.com/postline/postline/internal/account"
	"github.com/postline/postline/internal/apperr"
)

// admin lets only operator accounts through (the one serve creates first,
// or `postline user create --admin`).
func admin(h authedHandler) authedHandler {
	return func(w http.ResponseWriter, r *http.Request, p account.Principal) error {
		if !p.Admin {
			return apperr.Errorf(apperr.Forbidden, "This needs an operator account (postline user create --admin).")
		}
		return h(w, r, p)
	}
}

type accountJSON struct {
	ID          int64   `json:"id"`
	Login       string  `json:"login"`
	CreatedAt   string  `json:"created_at"`
	Disabled    bool    `json:"disabled"`
	DisabledAt  *string `json:"disabled_at"`
	Admin       bool    `json:"admin"`
	PasswordSet bool    `json:"password_set"`
	Delivery    struct {
		// Pool is the egress pool of the account's domains that name
		// none; "" for none.
		Pool string `json:"pool"`
	} `json:"delivery"`
}

func accountView(a account.Account) accountJSON {
	v := accountJSON{ID: a.ID, Login: a.Login, CreatedAt: timeJSON(a.CreatedAt), Disabled: a.DisabledAt != nil,
		Admin: a.Admin, PasswordSet: a.PasswordSet}
	v.Delivery.Pool = a.Pool
	if a.DisabledAt != nil {
		t := timeJSON(*a.DisabledAt)
		v.DisabledAt = &t
	}
	return v
}

func (s *Server) handleAdminAccounts(w http.ResponseWriter, r *http.Request, _ account.Principal) error {
	users, err := s.Accounts.Users(r.Context())
	if err != nil {
		return err
	}
	out := make([]accountJSON, len(users))
	for i, u := range users {
		out[i] = accountView(u)
	}
	writeJSON(w, http.StatusOK, map[string]any{"success": true, "data": out})
	return nil
}

func (s *Server) handleAdminCreateAccount(w http.ResponseWriter, r *http.Request, _ account.Principal) error {
	var in struct {
		Login string `json:"login"`
		Admin bool   `json:"admin"`
	}
	if err := decodeJSON(r, &in); err != nil {
		return err
	}
	if err := account.CheckLogin(in.Login); err != nil {
		return apperr.Field("login", err.Error())
	}
	a, err := s.Accounts.CreateUser(r.Context(), in.Login)
	if err != nil {
		return err
	}
	if in.Admin {
		if err := s.Accounts.SetAdmin(r.Context(), a.Login, true); err != nil {
			return err
		}
		a.Admin = true
	}
	writeJSON(w, http.StatusCreated, map[string]any{"success": true,
		"message": "Account " + a.Login + " created; give it a key with POST /api/admin/accounts/" + a.Login + "/keys.", "data": accountView(a)})
	return nil
}

func (s *Server) adminSetDisabled(w http.ResponseWriter, r *http.Request, disable bool) error {
	login := r.PathValue("login")
	var err error
	if disable {
		err = s.Accounts.DisableUser(r.Context(), login)
	} else {
		err = s.Accounts.EnableUser(r.Context(), login)
	}
	if err != nil {
		return err
	}
	a, err := s.Accounts.User(r.Context(), login)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, map[string]any{"success": true, "data": accountView(a)})
	return nil
}

func (s *Server) handleAdminDisable(w http.ResponseWriter, r *http.Request, _ account.Principal) error {
	return s.adminSetDisabled(w, r, true)
}

func (s *Server) handleAdminEnable(w http.ResponseWriter, r *http.Request, _ account.Principal) error {
	return s.adminSetDisabled(w, r, false)
}

// handleAdminUpdateAccount changes an account's settings: the fields
// given (delivery.pool), the others kept.
func (s *Server) handleAdminUpdateAccount(w http.ResponseWriter, r *http.Request, _ account.Principal) error {
	var in struct {
		Delivery struct {
			Pool *string `json:"pool"`
		} `json:"delivery"`
	}
	if err := decodeJSON(r, &in); err != nil {
		return err
	}
	login := r.PathValue("login")
	a, err := s.Accounts.User(r.Context(), login)
	if err != nil {
		return err
	}
	if in.Delivery.Pool != nil {
		if a, err = s.Accounts.SetPool(r.Context(), login, *in.Delivery.Pool); err != nil {
			return err
		}
	}
	writeJSON(w, http.StatusOK, map[string]any{"success": true, "message": "Account updated", "data": accountView(a)})
	return nil
}

func (s *Server) handleAdminKeys(w http.ResponseWriter, r *http.Request, _ account.Principal) error {
	return s.writeKeys(w, r, r.PathValue("login"))
}

func (s *Server) handleAdminQueue(w http.ResponseWriter, r *http.Request, _ account.Principal) error {
	counts, err := s.Queue.Counts(r.Context())
	if err != nil {
		return err
	}
	var queued, deferred, inFlight int
	var oldest *string
	domains := make([]map[string]any, 0, len(counts))
	for _, c := range counts {
		queued, deferred, inFlight = queued+c.Queued, deferred+c.Deferred, inFlight+c.InFlight
		d, err := s.Domains.ByID(r.Context(), c.DomainID)
		name := ""
		if err == nil {
			name = d.Name
		}
		m := map[string]any{"domain": name, "queued": c.Queued, "deferred": c.Deferred, "in_flight": c.InFlight, "oldest_deferred": nil}
		if c.OldestDeferred != nil {
			t := timeJSON(*c.OldestDeferred)
			m["oldest_deferred"] = t
			if oldest == nil || t < *oldest {
				oldest = &t
			}
		}
		domains = append(domains, m)
	}
	data := map[string]any{"queued": queued, "deferred": deferred, "in_flight": inFlight, "oldest_deferred": oldest, "domains": domains}
	if by := r.URL.Query().Get("by"); r.URL.Query().Has("by") {
		groups, err := s.queueGroups(r, by)
		if err != nil {
			return err
		}
		data["by"], data["groups"] = by, groups
	}
	writeJSON(w, http.StatusOK, map[string]any{"success": true, "data": data})
	return nil
}

// handleAdminRetry makes deferred deliveries due now: every one without a
// body (as before selectors), or a site's, a domain's or an account's.
func (s *Server) handleAdminRetry(w http.ResponseWriter, r *http.Request, _ account.Principal) error {
	var in selectorJSON
	if r.ContentLength != 0 {
		if err := decodeJSON(r, &in); err != nil {
			return err
		}
	}
	sel, err := in.selector(false)
	if err != nil {
		return err
	}
	n, err := s.Queue.Retry(r.Context(), sel)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, map[string]any{"success": true, "message": "Deferred deliveries are due now.", "data": map[string]any{"retried": n}})
	return nil
}

// handleAdminCreateKey makes a key for any account. One for the caller's
// own account is its member's (as through POST /api/keys), so removing the
// member revokes it; another account's key is that account's.
func (s *Server) handleAdminCreateKey(w http.ResponseWriter, r *http.Request, p account.Principal) error {
	o, err := readKeyRequest(r)
	if err != nil {
		return err
	}
	if a, err := s.Accounts.User(r.Context(), r.PathValue("login")); err == nil && a.ID == p.AccountID {
		o.MemberID = p.ActingMember()
	}
	return s.createKey(w, r, r.PathValue("login"), o)
}
