package console

import (
	"net/http"
	"strconv"
	"strings"

	"github.com/postline/postline/internal/account"
	"github.com/postline/postline/internal/apperr"
	"github.com/postline/postline/internal/suppression"
)

// keysPage lists the account's API keys (never a key itself, only its
// prefix); a key just created is shown once, in the answer to its POST.
func (c *Console) keysPage(w http.ResponseWriter, r *http.Request, s *account.Session) error {
	return c.renderKeys(w, r, s, http.StatusOK, "", nil)
}

func (c *Console) renderKeys(w http.ResponseWriter, r *http.Request, s *account.Session, status int, created string, fieldErr map[string][]string) error {
	keys, err := c.deps.Accounts.Keys(r.Context(), s.Login)
	if err != nil {
		return err
	}
	c.render(w, status, "keys", view{Title: "API keys", Session: s, Data: map[string]any{"Keys": keys, "Created": created, "Errors": fieldErr}})
	return nil
}

func (c *Console) createKey(w http.ResponseWriter, r *http.Request, s *account.Session) error {
	plain, _, err := c.deps.Accounts.CreateKey(r.Context(), s.Login, strings.TrimSpace(r.PostFormValue("name")))
	if e, ok := apperr.As(err); ok && e.Code == apperr.Invalid {
		return c.renderKeys(w, r, s, http.StatusUnprocessableEntity, "", e.Fields)
	}
	if err != nil {
		return err
	}
	return c.renderKeys(w, r, s, http.StatusCreated, plain, nil)
}

// revokeKey revokes one of the account's own keys; another account's key
// id is a 404, as a missing one.
func (c *Console) revokeKey(w http.ResponseWriter, r *http.Request, s *account.Session) error {
	id, err := strconv.ParseInt(r.PathValue("id"), 10, 64)
	if err != nil {
		return apperr.Errorf(apperr.NotFound, "no key")
	}
	keys, err := c.deps.Accounts.Keys(r.Context(), s.Login)
	if err != nil {
		return err
	}
	for _, k := range keys {
		if k.ID == id {
			if err := c.deps.Accounts.RevokeKey(r.Context(), id); err != nil {
				return err
			}
			http.Redirect(w, r, "/keys", http.StatusSeeOther)
			return nil
		}
	}
	return apperr.Errorf(apperr.NotFound, "no key %d", id)
}

// suppressionsPage shows one of a domain's lists, with search and paging.
func (c *Console) suppressionsPage(w http.ResponseWriter, r *http.Request, s *account.Session) error {
	return c.renderSuppressions(w, r, s, http.StatusOK, nil)
}

func (c *Console) renderSuppressions(w http.ResponseWriter, r *http.Request, s *account.Session, status int, fieldErr map[string][]string) error {
	d, err := c.deps.Domains.Owned(r.Context(), s.AccountID, r.PathValue("name"))
	if err != nil {
		return err
	}
	q := r.URL.Query()
	t := suppression.Type(q.Get("type"))
	if !t.Valid() {
		t = suppression.Bounce
	}
	page, _ := strconv.Atoi(q.Get("page"))
	page = max(page, 1)
	pg, err := c.deps.Suppressions.List(r.Context(), d.ID, t, q.Get("search"), page, 50)
	if err != nil {
		return err
	}
	c.render(w, status, "suppressions", view{Title: "Suppressions · " + d.Name, Session: s, Data: map[string]any{
		"Domain": d, "Type": string(t), "Types": []string{string(suppression.Bounce), string(suppression.Unsubscribe), string(suppression.Whitelist)},
		"Page": pg, "Search": q.Get("search"), "Errors": fieldErr}})
	return nil
}

func (c *Console) addSuppression(w http.ResponseWriter, r *http.Request, s *account.Session) error {
	d, err := c.deps.Domains.Owned(r.Context(), s.AccountID, r.PathValue("name"))
	if err != nil {
		return err
	}
	t := suppression.Type(r.PostFormValue("type"))
	_, _, err = c.deps.Suppressions.Add(r.Context(), suppression.AddParams{DomainID: d.ID, Type: t,
		Recipient: strings.TrimSpace(r.PostFormValue("recipient")), Description: r.PostFormValue("description"), Source: "console"})
	if e, ok := apperr.As(err); ok && (e.Code == apperr.Invalid || e.Code == apperr.Unprocessable) {
		return c.renderSuppressions(w, r, s, http.StatusUnprocessableEntity, e.Fields)
	}
	if err != nil {
		return err
	}
	http.Redirect(w, r, "/domains/"+d.Name+"/suppressions?type="+string(t), http.StatusSeeOther)
	return nil
}

func (c *Console) deleteSuppression(w http.ResponseWriter, r *http.Request, s *account.Session) error {
	d, err := c.deps.Domains.Owned(r.Context(), s.AccountID, r.PathValue("name"))
	if err != nil {
		return err
	}
	id, err := strconv.ParseInt(r.PathValue("id"), 10, 64)
	if err != nil {
		return apperr.Errorf(apperr.NotFound, "no entry")
	}
	if err := c.deps.Suppressions.Remove(r.Context(), d.ID, id); err != nil {
		return err
	}
	http.Redirect(w, r, "/domains/"+d.Name+"/suppressions?type="+r.PostFormValue("type"), http.StatusSeeOther)
	return nil
}
