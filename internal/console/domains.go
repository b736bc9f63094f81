package console

import (
	"net/http"
	"strconv"
	"strings"

	"github.com/postline/postline/internal/account"
	"github.com/postline/postline/internal/apperr"
	"github.com/postline/postline/internal/domain"
)

// addDomain adds a domain for the account, as POST /api/domains does (the
// relay host on the operator's allowlist), and shows its records.
func (c *Console) addDomain(w http.ResponseWriter, r *http.Request, s *account.Session) error {
	form := map[string]string{}
	for _, k := range []string{"name", "mode", "host", "port", "user"} {
		form[k] = strings.TrimSpace(r.PostFormValue(k))
	}
	del := domain.Delivery{Mode: domain.ModeDirect}
	if form["mode"] == "smtp" {
		del = domain.Delivery{Mode: domain.ModeSMTP, Host: form["host"], User: form["user"], Password: r.PostFormValue("password")}
		if form["port"] != "" {
			p, err := strconv.Atoi(form["port"])
			if err != nil {
				p = -1 // the service names the field
			}
			del.Port = p
		}
	}
	d, err := c.deps.Domains.Add(r.Context(), domain.AddParams{AccountID: s.AccountID, Name: form["name"], Delivery: del})
	if e, ok := apperr.As(err); ok && (e.Code == apperr.Invalid || e.Code == apperr.Conflict) {
		fields := e.Fields
		if e.Code == apperr.Conflict {
			fields = map[string][]string{"name": {e.Message}}
		}
		doms, lerr := c.deps.Domains.List(r.Context(), s.AccountID)
		if lerr != nil {
			return lerr
		}
		status := http.StatusUnprocessableEntity
		if e.Code == apperr.Conflict {
			status = http.StatusConflict
		}
		c.render(w, status, "domains", view{Title: "Domains", Session: s, Data: map[string]any{"Domains": doms, "Errors": fields, "Form": form}})
		return nil
	}
	if err != nil {
		return err
	}
	http.Redirect(w, r, "/domains/"+d.Name, http.StatusSeeOther)
	return nil
}

// verifyDomain looks the records up now and shows each one's state.
func (c *Console) verifyDomain(w http.ResponseWriter, r *http.Request, s *account.Session) error {
	d, err := c.deps.Domains.Owned(r.Context(), s.AccountID, r.PathValue("name"))
	if err != nil {
		return err
	}
	d, recs, err := c.deps.Domains.Verify(r.Context(), d, false)
	if apperr.CodeOf(err) == apperr.Conflict {
		c.render(w, http.StatusConflict, "domain", view{Title: d.Name, Session: s, Data: map[string]any{"Domain": d,
			"Records": c.deps.Domains.Records(d), "Claim": d.ClaimStatus(), "Notice": apperrMessage(err)}})
		return nil
	}
	if err != nil {
		return err
	}
	notice := d.Name + " is verified."
	if !d.Verified() {
		notice = d.Name + " is not verified yet: publish the records marked missing or mismatch, then verify again."
	}
	c.render(w, http.StatusOK, "domain", view{Title: d.Name, Session: s, Data: map[string]any{"Domain": d,
		"Records": recs, "Claim": d.ClaimStatus(), "Notice": notice}})
	return nil
}

// deleteDomain removes a domain once its name is typed again.
func (c *Console) deleteDomain(w http.ResponseWriter, r *http.Request, s *account.Session) error {
	d, err := c.deps.Domains.Owned(r.Context(), s.AccountID, r.PathValue("name"))
	if err != nil {
		return err
	}
	if strings.TrimSpace(r.PostFormValue("confirm")) != d.Name {
		c.render(w, http.StatusUnprocessableEntity, "domain", view{Title: d.Name, Session: s, Data: map[string]any{"Domain": d,
			"Records": c.deps.Domains.Records(d), "Claim": d.ClaimStatus(), "ConfirmError": "Type " + d.Name + " to confirm."}})
		return nil
	}
	if err := c.deps.Domains.Remove(r.Context(), d); err != nil {
		return err
	}
	http.Redirect(w, r, "/domains", http.StatusSeeOther)
	return nil
}

func apperrMessage(err error) string {
	if e, ok := apperr.As(err); ok {
		return e.Message
	}
	return err.Error()
}
