package console

import (
	"encoding/csv"
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/postline/postline/internal/account"
	"github.com/postline/postline/internal/apperr"
	"github.com/postline/postline/internal/audit"
	"github.com/postline/postline/internal/suppression"
	"github.com/postline/postline/internal/validation"
)

// keysPage lists the account's API keys (never a key itself, only its
// prefix); a key just created is shown once, on the page its POST
// redirects to (the flash's secret).
func (c *Console) keysPage(w http.ResponseWriter, r *http.Request, s *account.Session) error {
	return c.renderKeys(w, r, s, http.StatusOK, nil)
}

func (c *Console) renderKeys(w http.ResponseWriter, r *http.Request, s *account.Session, status int, fieldErr map[string][]string) error {
	keys, err := c.deps.Accounts.Keys(r.Context(), s.Login)
	if err != nil {
		return err
	}
	// The webhook signing key is shown to sessions that may manage
	// webhooks: receivers of Mailgun-format posts verify with it. A
	// viewer reads no secret.
	signing := ""
	if s.Can(account.ScopeWebhooks) && s.MayChange() {
		if signing, err = c.deps.Webhooks.SigningKey(r.Context(), s.AccountID); err != nil {
			return err
		}
	}
	c.render(w, r, status, "keys", view{Title: "API keys", Session: s, Data: map[string]any{"Keys": keys,
		"Errors": fieldErr, "AllScopes": account.AllScopes, "SigningKey": signing,
		"PasswordRule": account.PasswordRule(), "PasswordMin": account.MinPasswordLen}})
	return nil
}

func (c *Console) createKey(w http.ResponseWriter, r *http.Request, s *account.Session) error {
	plain, k, err := c.createKeyFromForm(r, s)
	if e, ok := apperr.As(err); ok && e.Code == apperr.Invalid {
		return c.renderKeys(w, r, s, http.StatusUnprocessableEntity, e.Fields)
	}
	if err != nil {
		return err
	}
	c.record(r, s, audit.KeyCreated, keyName(k))
	c.redirect(w, r, "/keys", flash{Notice: "API key created.", Secret: plain})
	return nil
}

// revokeKey revokes one of the account's own keys; another account's key
// id is a 404, as a missing one.
func (c *Console) revokeKey(w http.ResponseWriter, r *http.Request, s *account.Session) error {
	id, err := strconv.ParseInt(r.PathValue("id"), 10, 64)
	if err != nil {
		return apperr.Errorf(apperr.NotFound, "no key")
	}
	if err := c.deps.Accounts.RevokeOwnKey(r.Context(), s.Principal, id); apperr.CodeOf(err) == apperr.Forbidden {
		return c.renderKeys(w, r, s, http.StatusForbidden, map[string][]string{"revoke": {err.Error()}})
	} else if err != nil {
		return err
	}
	notice := "API key revoked: it no longer works."
	if id == s.KeyID {
		notice = "API key revoked: it no longer works, and this session, started with it, has ended."
	}
	c.record(r, s, audit.KeyRevoked, fmt.Sprintf("key %d", id))
	c.redirect(w, r, "/keys", flash{Notice: notice})
	return nil
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
	c.render(w, r, status, "suppressions", view{Title: "Suppressions · " + d.Name, Session: s, Data: map[string]any{
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
	c.record(r, s, audit.SuppressionAdded, d.Name+": "+strings.TrimSpace(r.PostFormValue("recipient"))+" ("+string(t)+")")
	c.redirect(w, r, "/domains/"+d.Name+"/suppressions?type="+string(t),
		flash{Notice: "Added " + strings.TrimSpace(r.PostFormValue("recipient")) + " to the " + string(t) + " list."})
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
	t := suppression.Type(r.PostFormValue("type"))
	if !t.Valid() {
		t = suppression.Bounce
	}
	c.record(r, s, audit.SuppressionRemoved, fmt.Sprintf("%s: entry %d of the %s list", d.Name, id, t))
	c.redirect(w, r, "/domains/"+d.Name+"/suppressions?type="+string(t), flash{Notice: "Removed from the " + string(t) + " list."})
	return nil
}

// importSuppressions adds the rows of an uploaded CSV (recipient,type; a
// header row allowed; type defaults to bounce), as `postline suppression
// import` does; a bad row stops it, naming its line.
func (c *Console) importSuppressions(w http.ResponseWriter, r *http.Request, s *account.Session) error {
	d, err := c.deps.Domains.Owned(r.Context(), s.AccountID, r.PathValue("name"))
	if err != nil {
		return err
	}
	f, _, err := r.FormFile("file")
	if err != nil {
		return c.renderSuppressions(w, r, s, http.StatusUnprocessableEntity, map[string][]string{"file": {"Choose a CSV file: recipient,type a line."}})
	}
	defer f.Close()
	res, err := c.deps.Suppressions.Import(r.Context(), d.ID, f, "console-import")
	if err != nil {
		msg := fmt.Sprintf("%d added, %d already present, then: %s", res.Added, res.Existing, apperrText(err))
		return c.renderSuppressions(w, r, s, http.StatusUnprocessableEntity, map[string][]string{"file": {msg}})
	}
	c.record(r, s, audit.SuppressionsImport, fmt.Sprintf("%s: %d added", d.Name, res.Added))
	c.redirect(w, r, "/domains/"+d.Name+"/suppressions", flash{Notice: fmt.Sprintf("Imported: %s added, %s already present.",
		num(int64(res.Added)), num(int64(res.Existing)))})
	return nil
}

func apperrText(err error) string {
	if e, ok := apperr.As(err); ok {
		return e.Error()
	}
	return err.Error()
}

// exportSuppressions downloads one of a domain's lists as CSV
// (recipient,type,source,created_at), which the import reads back.
func (c *Console) exportSuppressions(w http.ResponseWriter, r *http.Request, s *account.Session) error {
	d, err := c.deps.Domains.Owned(r.Context(), s.AccountID, r.PathValue("name"))
	if err != nil {
		return err
	}
	t := suppression.Type(r.URL.Query().Get("type"))
	if !t.Valid() {
		t = suppression.Bounce
	}
	w.Header().Set("Content-Type", "text/csv; charset=utf-8")
	w.Header().Set("Content-Disposition", fmt.Sprintf(`attachment; filename="%s-%s.csv"`, d.Name, t))
	cw := csv.NewWriter(w)
	cw.Write([]string{"recipient", "type", "source", "created_at"}) //nolint:errcheck // flushed below
	for page := 1; ; page++ {
		pg, err := c.deps.Suppressions.List(r.Context(), d.ID, t, "", page, suppression.MaxPerPage)
		if err != nil {
			return err
		}
		for _, e := range pg.Entries {
			src := ""
			if e.Source != nil {
				src = *e.Source
			}
			// A recipient such as =cmd@x.example is a valid address and a formula to a spreadsheet.
			cw.Write(validation.SpreadsheetSafe([]string{e.Recipient, string(e.Type), src, e.CreatedAt.UTC().Format(time.RFC3339)})) //nolint:errcheck
		}
		if page >= pg.LastPage {
			break
		}
	}
	cw.Flush()
	return cw.Error()
}

// setPassword sets (or, empty, removes) the account's console password,
// as `postline user password` does; it is asked twice. Only the account
// itself sets it (account.Principal.IsAccount): a member's password would
// outlive its removal.
func (c *Console) setPassword(w http.ResponseWriter, r *http.Request, s *account.Session) error {
	if !s.IsAccount() {
		c.render(w, r, http.StatusForbidden, "notfound", view{Title: "The account's only", Session: s,
			Data: map[string]any{"Message": "Only the account itself (its login with a key of its own, or its password) sets the account's console password."}})
		return nil
	}
	pw, again := r.PostFormValue("password"), r.PostFormValue("again")
	if pw != again {
		return c.renderKeys(w, r, s, http.StatusUnprocessableEntity, map[string][]string{"password": {"The two passwords differ."}})
	}
	err := c.deps.Accounts.SetPassword(r.Context(), s.Login, pw)
	if e, ok := apperr.As(err); ok && e.Code == apperr.Invalid {
		msgs := e.Fields["password"]
		if len(msgs) == 0 {
			msgs = []string{e.Message}
		}
		return c.renderKeys(w, r, s, http.StatusUnprocessableEntity, map[string][]string{"password": msgs})
	}
	if e, ok := apperr.As(err); ok && e.Code == apperr.RateLimited { // hashing is bounded like checking
		return c.renderKeys(w, r, s, http.StatusTooManyRequests, map[string][]string{"password": {e.Message}})
	}
	if err != nil {
		return err
	}
	notice, action := "Console password set: sign in with it or with an API key.", audit.PasswordSet
	if pw == "" {
		notice, action = "Console password removed: sign in with an API key.", audit.PasswordRemoved
	}
	c.record(r, s, action, s.Login)
	c.redirect(w, r, "/keys", flash{Notice: notice})
	return nil
}

// createKeyFromForm reads the key form: ticked scopes, a domain list and
// an expiry date (the end of that day, UTC).
func (c *Console) createKeyFromForm(r *http.Request, s *account.Session) (string, account.Key, error) {
	o := account.KeyOptions{Name: strings.TrimSpace(r.PostFormValue("name"))}
	var err error
	if ticked := r.PostForm["scopes"]; len(ticked) > 0 {
		if o.Scopes, err = account.CheckScopes(ticked); err != nil {
			return "", account.Key{}, err
		}
	}
	if o.Domains, err = account.ParseDomains(r.PostFormValue("domains")); err != nil {
		return "", account.Key{}, err
	}
	// A key with the keys scope is the account's: with every scope it
	// signs in to the console as an owner, and it reads the audit log and
	// makes keys through the API. A developer's keys stay below its role.
	if !s.MayManageTeam() && (o.Scopes == nil || slices.Contains(o.Scopes, account.ScopeKeys)) {
		return "", account.Key{}, apperr.Field("scopes", "Your role ("+string(s.RoleOf())+
			") makes keys without the keys scope (a key with every scope is the account's, an owner's): tick the scopes the key needs, or ask an owner.")
	}
	if v := strings.TrimSpace(r.PostFormValue("expires")); v != "" {
		day, err := time.Parse("2006-01-02", v)
		if err != nil {
			return "", account.Key{}, apperr.Field("expires_at", "expires must be a date (YYYY-MM-DD)")
		}
		end := day.Add(24*time.Hour - time.Millisecond)
		o.ExpiresAt = &end
	}
	// A session started with an expiring key makes keys that expire no later.
	if o, err = s.Principal.ChildKey(o); err != nil {
		return "", account.Key{}, err
	}
	return c.deps.Accounts.CreateKeyWith(r.Context(), s.Login, o)
}

// keyName names a key in the audit log: its name and prefix.
func keyName(k account.Key) string {
	if k.Name == "" {
		return k.Prefix + "…"
	}
	return k.Name + " (" + k.Prefix + "…)"
}
