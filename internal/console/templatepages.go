package console

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/postline/postline/internal/account"
	"github.com/postline/postline/internal/apperr"
	"github.com/postline/postline/internal/audit"
	"github.com/postline/postline/internal/domain"
	"github.com/postline/postline/internal/sending"
	"github.com/postline/postline/internal/templates"
)

func (c *Console) templatesPage(w http.ResponseWriter, r *http.Request, s *account.Session) error {
	return c.renderTemplates(w, r, s, http.StatusOK, nil)
}

func (c *Console) renderTemplates(w http.ResponseWriter, r *http.Request, s *account.Session, status int, fieldErr map[string][]string) error {
	d, err := c.deps.Domains.Owned(r.Context(), s.AccountID, r.PathValue("name"))
	if err != nil {
		return err
	}
	list, err := c.deps.Templates.List(r.Context(), d.ID)
	if err != nil {
		return err
	}
	c.render(w, r, status, "templates", view{Title: "Templates · " + d.Name, Session: s, Data: map[string]any{
		"Domain": d, "Templates": list, "Errors": fieldErr, "Form": templateForm(r)}})
	return nil
}

// templateForm reads the form's fields (empty on a GET), so that a refused
// form shows what was typed.
func templateForm(r *http.Request) templates.Input {
	return templates.Input{Name: strings.TrimSpace(r.PostFormValue("name")), Subject: r.PostFormValue("subject"),
		HTML: r.PostFormValue("html"), Text: r.PostFormValue("text"), Strict: r.PostFormValue("strict") == "on"}
}

func (c *Console) createTemplate(w http.ResponseWriter, r *http.Request, s *account.Session) error {
	d, err := c.deps.Domains.Owned(r.Context(), s.AccountID, r.PathValue("name"))
	if err != nil {
		return err
	}
	t, err := c.deps.Templates.Create(r.Context(), d.ID, templateForm(r))
	if e, ok := apperr.As(err); ok && (e.Code == apperr.Invalid || e.Code == apperr.Conflict) {
		fields := e.Fields
		if fields == nil {
			fields = map[string][]string{"name": {e.Message}}
		}
		return c.renderTemplates(w, r, s, http.StatusUnprocessableEntity, fields)
	}
	if err != nil {
		return err
	}
	c.record(r, s, audit.TemplateCreated, d.Name+": "+t.Name)
	c.redirect(w, r, "/domains/"+d.Name+"/templates/"+t.Name, flash{Notice: "Template " + t.Name + " created (version 1)."})
	return nil
}

// templateView is what the template page shows.
type templateView struct {
	domain   domain.Domain
	tpl      templates.Template
	form     templates.Input
	errors   map[string][]string
	preview  *templates.Rendered
	varsText string
}

// templatePage shows a template's version; with ?variables= (the preview
// form, a GET: rendering changes nothing) it renders that version with
// them, as a send would.
func (c *Console) templatePage(w http.ResponseWriter, r *http.Request, s *account.Session) error {
	if !r.URL.Query().Has("variables") {
		return c.renderTemplate(w, r, s, http.StatusOK, templateView{varsText: "{}"})
	}
	return c.previewTemplate(w, r, s)
}

func (c *Console) renderTemplate(w http.ResponseWriter, r *http.Request, s *account.Session, status int, v templateView) error {
	d, err := c.deps.Domains.Owned(r.Context(), s.AccountID, r.PathValue("name"))
	if err != nil {
		return err
	}
	version, _ := strconv.Atoi(r.URL.Query().Get("version"))
	t, err := c.deps.Templates.Get(r.Context(), d.ID, r.PathValue("tpl"), max(version, 0))
	if err != nil {
		return err
	}
	active, err := c.deps.Templates.Get(r.Context(), d.ID, t.Name, 0)
	if err != nil {
		return err
	}
	form := v.form
	if form.Subject == "" && form.Text == "" {
		form = templates.Input{Subject: t.Subject, HTML: t.HTML, Text: t.Text, Strict: t.Strict}
	}
	versions := make([]int, active.Version)
	for i := range versions {
		versions[i] = active.Version - i
	}
	c.render(w, r, status, "template", view{Title: "Template " + t.Name + " · " + d.Name, Session: s, Data: map[string]any{
		"Domain": d, "T": t, "Active": active.Version, "Versions": versions, "Form": form, "Errors": v.errors,
		"Preview": v.preview, "Vars": v.varsText}})
	return nil
}

func (c *Console) updateTemplate(w http.ResponseWriter, r *http.Request, s *account.Session) error {
	d, err := c.deps.Domains.Owned(r.Context(), s.AccountID, r.PathValue("name"))
	if err != nil {
		return err
	}
	in := templateForm(r)
	t, err := c.deps.Templates.Update(r.Context(), d.ID, r.PathValue("tpl"), in)
	if e, ok := apperr.As(err); ok && e.Code == apperr.Invalid {
		return c.renderTemplate(w, r, s, http.StatusUnprocessableEntity, templateView{form: in, errors: e.Fields, varsText: "{}"})
	}
	if err != nil {
		return err
	}
	c.record(r, s, audit.TemplateChanged, fmt.Sprintf("%s: %s version %d", d.Name, t.Name, t.Version))
	c.redirect(w, r, "/domains/"+d.Name+"/templates/"+t.Name, flash{Notice: fmt.Sprintf("Saved as version %d, now the active one.", t.Version)})
	return nil
}

// previewTemplate renders the shown version with the variables typed in.
func (c *Console) previewTemplate(w http.ResponseWriter, r *http.Request, s *account.Session) error {
	d, err := c.deps.Domains.Owned(r.Context(), s.AccountID, r.PathValue("name"))
	if err != nil {
		return err
	}
	version, _ := strconv.Atoi(r.URL.Query().Get("version"))
	_, compiled, err := c.deps.Templates.Load(r.Context(), d.ID, r.PathValue("tpl"), max(version, 0))
	if err != nil {
		return err
	}
	raw := r.URL.Query().Get("variables")
	v := templateView{varsText: raw}
	var vars map[string]any
	if err := json.Unmarshal([]byte(raw), &vars); err != nil {
		v.errors = map[string][]string{"variables": {"The variables must be a JSON object."}}
		return c.renderTemplate(w, r, s, http.StatusUnprocessableEntity, v)
	}
	out, err := compiled.Render(vars)
	if e, ok := apperr.As(err); ok && e.Code == apperr.Invalid {
		v.errors = e.Fields
		return c.renderTemplate(w, r, s, http.StatusUnprocessableEntity, v)
	}
	if err != nil {
		return err
	}
	v.preview = &out
	return c.renderTemplate(w, r, s, http.StatusOK, v)
}

func (c *Console) deleteTemplate(w http.ResponseWriter, r *http.Request, s *account.Session) error {
	d, err := c.deps.Domains.Owned(r.Context(), s.AccountID, r.PathValue("name"))
	if err != nil {
		return err
	}
	if err := c.deps.Templates.Delete(r.Context(), d.ID, r.PathValue("tpl")); err != nil {
		return err
	}
	c.record(r, s, audit.TemplateDeleted, d.Name+": "+r.PathValue("tpl"))
	c.redirect(w, r, "/domains/"+d.Name+"/templates", flash{Notice: "Template " + r.PathValue("tpl") + " deleted with all its versions."})
	return nil
}

// cancelMessage cancels what of a message is not sent yet, from its page.
func (c *Console) cancelMessage(w http.ResponseWriter, r *http.Request, s *account.Session) error {
	d, err := c.deps.Domains.Owned(r.Context(), s.AccountID, r.PathValue("name"))
	if err != nil {
		return err
	}
	cancelled, err := c.deps.Sending.Cancel(r.Context(), d.ID, r.PathValue("id"))
	notice := "Cancelled: " + plural(int64(len(cancelled)), "delivery", "deliveries") + " will not be sent."
	if apperr.CodeOf(err) == apperr.Conflict {
		notice, err = "Nothing was left to cancel: every delivery was sent or had ended.", nil
	}
	if err != nil {
		return err
	}
	if len(cancelled) > 0 {
		c.record(r, s, audit.MessageCancelled, fmt.Sprintf("%s: %s (%d deliveries)", d.Name, r.PathValue("id"), len(cancelled)))
	}
	c.redirect(w, r, "/domains/"+d.Name+"/messages/"+r.PathValue("id"), flash{Notice: notice})
	return nil
}

// recipientState is a message's recipient for the chain page.
type recipientState struct {
	Recipient, State string
	Attempts         int
	Cancellable      bool
}

func (c *Console) messageStates(r *http.Request, d domain.Domain, id string) ([]recipientState, *time.Time) {
	ds, err := c.deps.Sending.Message(r.Context(), d.ID, id)
	if err != nil {
		return nil, nil
	}
	out := make([]recipientState, len(ds))
	for i, m := range ds {
		out[i] = recipientState{Recipient: m.Recipient, State: c.deps.Sending.StateOf(m), Attempts: m.Attempts,
			Cancellable: m.State == sending.StatePending || m.State == sending.StateDeferred}
	}
	return out, ds[0].DeliverAt
}
