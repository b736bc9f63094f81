package console

import (
	"net/http"
	"strconv"
	"strings"

	"github.com/postline/postline/internal/account"
	"github.com/postline/postline/internal/apperr"
	"github.com/postline/postline/internal/audit"
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
		c.render(w, r, status, "domains", view{Title: "Domains", Session: s, Data: map[string]any{"Domains": doms, "Errors": fields, "Form": form}})
		return nil
	}
	if err != nil {
		return err
	}
	c.record(r, s, audit.DomainAdded, d.Name)
	c.redirect(w, r, "/domains/"+d.Name, flash{Notice: "Domain " + d.Name + " added. Publish the records below, then verify it: " +
		"until then the name is not reserved, and the claim lapses unless verified."})
	return nil
}

// verifyDomain looks the records up now; the domain's page then shows
// each one's state.
func (c *Console) verifyDomain(w http.ResponseWriter, r *http.Request, s *account.Session) error {
	d, err := c.deps.Domains.Owned(r.Context(), s.AccountID, r.PathValue("name"))
	if err != nil {
		return err
	}
	d, _, err = c.deps.Domains.Verify(r.Context(), d, false)
	if apperr.CodeOf(err) == apperr.Conflict { // the name is another account's now
		c.redirect(w, r, "/domains/"+d.Name, flash{Notice: apperrMessage(err)})
		return nil
	}
	if err != nil {
		return err
	}
	c.record(r, s, audit.DomainVerified, d.Name+verifiedState(d))
	c.redirect(w, r, "/domains/"+d.Name, flash{Notice: verifyNotice(d)})
	return nil
}

// verifyNotice says what a check found and what it changed: a verified
// domain stays verified whatever the check finds.
func verifyNotice(d domain.Domain) string {
	switch {
	case d.RecordsChanged():
		return d.Name + " stays verified and keeps sending, but its DNS records changed since verification: " +
			d.RecordsAdvice() + "."
	case d.Verified():
		return d.Name + " is verified: every required record is in place."
	}
	return d.Name + " is not verified yet: " + d.RecordsAdvice() + ", then verify again."
}

// deleteDomain removes a domain once its name is typed again.
func (c *Console) deleteDomain(w http.ResponseWriter, r *http.Request, s *account.Session) error {
	d, err := c.deps.Domains.Owned(r.Context(), s.AccountID, r.PathValue("name"))
	if err != nil {
		return err
	}
	if strings.TrimSpace(r.PostFormValue("confirm")) != d.Name {
		c.render(w, r, http.StatusUnprocessableEntity, "domain", view{Title: d.Name, Session: s, Data: map[string]any{"Domain": d,
			"Records": c.deps.Domains.CheckedRecords(d), "Claim": d.ClaimStatus(), "ConfirmError": "Type " + d.Name + " to confirm."}})
		return nil
	}
	if err := c.deps.Domains.Remove(r.Context(), d); err != nil {
		return err
	}
	c.record(r, s, audit.DomainDeleted, d.Name)
	c.redirect(w, r, "/domains", flash{Notice: "Domain " + d.Name + " deleted, with its DKIM key, log, suppressions and webhooks."})
	return nil
}

func apperrMessage(err error) string {
	if e, ok := apperr.As(err); ok {
		return e.Message
	}
	return err.Error()
}

// domainSettings changes what the domain page's settings form covers: the
// tracking switches, the tracking and authentication hosts (empty
// removes), and how mail leaves (the DKIM key stays; an empty relay
// password keeps the stored one). Each change goes through the domain
// service, which checks it as for the API.
func (c *Console) domainSettings(w http.ResponseWriter, r *http.Request, s *account.Session) error {
	d, err := c.deps.Domains.Owned(r.Context(), s.AccountID, r.PathValue("name"))
	if err == nil {
		d, err = c.deps.Domains.Current(r.Context(), d) // the kept relay password is the stored one
	}
	if err != nil {
		return err
	}
	ctx := r.Context()
	fail := func(err error) error {
		e, ok := apperr.As(err)
		if !ok || (e.Code != apperr.Invalid && e.Code != apperr.Conflict && e.Code != apperr.Unavailable) {
			return err
		}
		fields := e.Fields
		if len(fields) == 0 {
			fields = map[string][]string{"settings": {e.Message}}
		}
		c.render(w, r, http.StatusUnprocessableEntity, "domain", view{Title: d.Name, Session: s, Data: map[string]any{"Domain": d,
			"Records": c.deps.Domains.CheckedRecords(d), "Claim": d.ClaimStatus(), "Errors": fields}})
		return nil
	}
	var saved string
	switch r.PostFormValue("section") {
	case "tracking":
		saved = "Tracking settings of " + d.Name + " saved."
		t := domain.Tracking{Opens: r.PostFormValue("opens") == "on", Clicks: r.PostFormValue("clicks") == "on",
			Unsubscribe: r.PostFormValue("unsubscribe") == "on"}
		if d, err = c.deps.Domains.SetTrackingOptions(ctx, d, t); err != nil {
			return fail(err)
		}
		if d, err = c.deps.Domains.SetTracking(ctx, d, strings.TrimSpace(r.PostFormValue("tracking_host"))); err != nil {
			return fail(err)
		}
		if d, err = c.deps.Domains.SetAuth(ctx, d, strings.TrimSpace(r.PostFormValue("auth_host"))); err != nil {
			return fail(err)
		}
	case "delivery":
		saved = "How mail of " + d.Name + " leaves: saved."
		del := domain.Delivery{Mode: domain.ModeDirect, Pool: strings.TrimSpace(r.PostFormValue("pool"))}
		if r.PostFormValue("mode") == "smtp" {
			del = domain.Delivery{Mode: domain.ModeSMTP, Host: strings.TrimSpace(r.PostFormValue("host")),
				User: strings.TrimSpace(r.PostFormValue("user")), Password: r.PostFormValue("password"), TLS: r.PostFormValue("tls")}
			if p := strings.TrimSpace(r.PostFormValue("port")); p != "" {
				if del.Port, err = strconv.Atoi(p); err != nil {
					del.Port = -1
				}
			}
			if del.Password == "" && d.Delivery.Mode == domain.ModeSMTP && del.User == d.Delivery.User {
				del.Password = d.Delivery.Password // kept: the form never shows it
			}
		}
		if d, err = c.deps.Domains.SetDelivery(ctx, d, del, false); err != nil {
			return fail(err)
		}
	case "inbound":
		if d, err = c.deps.Domains.SetInbound(ctx, d, r.PostFormValue("inbound") == "on"); err != nil {
			return fail(err)
		}
	default:
		return apperr.Errorf(apperr.NotFound, "no such settings")
	}
	c.record(r, s, audit.DomainChanged, d.Name+": "+r.PostFormValue("section"))
	c.redirect(w, r, "/domains/"+d.Name, flash{Notice: saved})
	return nil
}

// verifiedState says what a check left a domain as, for the audit log.
func verifiedState(d domain.Domain) string {
	switch {
	case d.RecordsChanged():
		return " (verified; records changed)"
	case d.Verified():
		return " (verified)"
	}
	return " (not verified)"
}
