package console

import (
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"strings"

	"github.com/postline/postline/internal/account"
	"github.com/postline/postline/internal/apperr"
	"github.com/postline/postline/internal/audit"
	"github.com/postline/postline/internal/event"
	"github.com/postline/postline/internal/webhook"
)

// hookView is a webhook with its recent posts.
type hookView struct {
	webhook.Webhook
	Posts []webhook.Post
}

// webhooksPage lists a domain's webhooks with their recent posts; a new
// webhook's signing secret is shown once, on the page its POST redirects
// to (the flash's secret).
func (c *Console) webhooksPage(w http.ResponseWriter, r *http.Request, s *account.Session) error {
	return c.renderWebhooks(w, r, s, http.StatusOK, nil)
}

func (c *Console) renderWebhooks(w http.ResponseWriter, r *http.Request, s *account.Session, status int, fieldErr map[string][]string) error {
	d, err := c.deps.Domains.Owned(r.Context(), s.AccountID, r.PathValue("name"))
	if err != nil {
		return err
	}
	list, err := c.deps.Webhooks.List(r.Context(), d.ID)
	if err != nil {
		return err
	}
	hooks := make([]hookView, len(list))
	for i, h := range list {
		h.Secret = "" // never rendered
		posts, err := c.deps.Webhooks.Posts(r.Context(), d.ID, h.ID, 10)
		if err != nil {
			return err
		}
		hooks[i] = hookView{Webhook: h, Posts: posts}
	}
	c.render(w, r, status, "webhooks", view{Title: "Webhooks · " + d.Name, Session: s, Data: map[string]any{
		"Domain": d, "Hooks": hooks, "Errors": fieldErr, "Types": event.Types()}})
	return nil
}

func (c *Console) createWebhook(w http.ResponseWriter, r *http.Request, s *account.Session) error {
	d, err := c.deps.Domains.Owned(r.Context(), s.AccountID, r.PathValue("name"))
	if err != nil {
		return err
	}
	if err := r.ParseForm(); err != nil {
		return apperr.Field("url", "the form could not be read")
	}
	h, err := c.deps.Webhooks.Create(r.Context(), d.ID, strings.TrimSpace(r.PostForm.Get("url")), r.PostForm["event_types"])
	if e, ok := apperr.As(err); ok && e.Code == apperr.Invalid {
		return c.renderWebhooks(w, r, s, http.StatusUnprocessableEntity, e.Fields)
	}
	if err != nil {
		return err
	}
	c.record(r, s, audit.WebhookCreated, d.Name+": "+h.URL)
	c.redirect(w, r, "/domains/"+d.Name+"/webhooks", flash{Notice: "Webhook to " + h.URL + " added.", Secret: h.Secret})
	return nil
}

func (c *Console) deleteWebhook(w http.ResponseWriter, r *http.Request, s *account.Session) error {
	d, err := c.deps.Domains.Owned(r.Context(), s.AccountID, r.PathValue("name"))
	if err != nil {
		return err
	}
	id, err := strconv.ParseInt(r.PathValue("id"), 10, 64)
	if err != nil {
		return apperr.Errorf(apperr.NotFound, "no webhook")
	}
	if err := c.deps.Webhooks.Delete(r.Context(), d.ID, id); err != nil {
		return err
	}
	c.record(r, s, audit.WebhookDeleted, fmt.Sprintf("%s: webhook %d", d.Name, id))
	c.redirect(w, r, "/domains/"+d.Name+"/webhooks", flash{Notice: "Webhook deleted: nothing more is posted to it."})
	return nil
}

// testWebhook posts a made-up event to one of the domain's webhooks as its
// real posts go (WebhookTester) and says what the endpoint answered;
// nothing is recorded. It counts against the account's per-minute budget
// for domain endpoints, so the button cannot be made a request cannon.
func (c *Console) testWebhook(w http.ResponseWriter, r *http.Request, s *account.Session) error {
	d, err := c.deps.Domains.Owned(r.Context(), s.AccountID, r.PathValue("name"))
	if err != nil {
		return err
	}
	id, err := strconv.ParseInt(r.PathValue("id"), 10, 64)
	if err != nil {
		return apperr.Errorf(apperr.NotFound, "no webhook")
	}
	list, err := c.deps.Webhooks.List(r.Context(), d.ID)
	if err != nil {
		return err
	}
	i := slices.IndexFunc(list, func(h webhook.Webhook) bool { return h.ID == id })
	if i < 0 {
		return apperr.Errorf(apperr.NotFound, "no webhook")
	}
	back := "/domains/" + d.Name + "/webhooks"
	if c.deps.WebhookTester == nil {
		c.redirect(w, r, back, flash{Notice: "This server does not post webhooks, so it cannot test one."})
		return nil
	}
	if wait := c.domainBudget(r, s); wait != "" {
		c.redirect(w, r, back, flash{Notice: "Too many requests for this account's domains; try again in " + wait + "."})
		return nil
	}
	h := list[i]
	status, problem := c.deps.WebhookTester.Test(r.Context(), h)
	notice := "The test event to " + h.URL + " was answered " + strconv.Itoa(status) + ": the endpoint works."
	if problem != "" {
		notice = "The test event to " + h.URL + " failed: " + problem + "."
	}
	c.redirect(w, r, back, flash{Notice: notice})
	return nil
}
