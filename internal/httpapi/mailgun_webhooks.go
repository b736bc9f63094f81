package httpapi

import (
	"fmt"
	"mime"
	"net/http"
	"net/url"
	"strconv"

	"github.com/postline/postline/internal/account"
	"github.com/postline/postline/internal/apperr"
	"github.com/postline/postline/internal/mailgun"
	"github.com/postline/postline/internal/webhook"
)

// Mailgun's domain webhooks: for each webhook id (delivered,
// permanent_fail ...) up to three URLs, each posted every event of the id
// alone in Mailgun's shape (package webhook, FormatMailgun). The answers
// are Mailgun's: {"webhooks": {ID: {"urls": [...]}}} for the list,
// {"webhook": {"urls": [...]}} (with a message when it changed) for one.

// mailgunWebhooksRoute takes GET /v3/domains/{domain}/webhooks from the
// route of GET /v3/{domain}/{list}/{address}.
func (s *Server) mailgunWebhooksRoute() alt {
	return alt{route: route{method: "GET", path: "/v3/domains/{domain}/webhooks", group: groupMailgun, scope: account.ScopeWebhooks,
		handler: s.handleMailgunWebhooks}, take: func(r *http.Request) bool {
		if r.PathValue("domain") != "domains" || r.PathValue("address") != "webhooks" {
			return false
		}
		r.SetPathValue("domain", r.PathValue("list"))
		return true
	}}
}

// handleMailgunWebhooks is GET /v3/domains/{domain}/webhooks: the ids
// that have URLs.
func (s *Server) handleMailgunWebhooks(w http.ResponseWriter, r *http.Request, p account.Principal) error {
	d, err := s.mailgunDomain(r, p)
	if err != nil {
		return err
	}
	hooks, err := s.Webhooks.MailgunWebhooks(r.Context(), d.ID)
	if err != nil {
		return err
	}
	out := map[string]any{}
	for id, urls := range hooks {
		out[id] = map[string]any{"urls": urls}
	}
	writeJSON(w, http.StatusOK, map[string]any{"webhooks": out})
	return nil
}

// handleMailgunWebhookCreate is POST /v3/domains/{domain}/webhooks with id
// and url (repeated, up to three); an id that has URLs is refused.
func (s *Server) handleMailgunWebhookCreate(w http.ResponseWriter, r *http.Request, p account.Principal) error {
	d, err := s.mailgunDomain(r, p)
	if err != nil {
		return err
	}
	form, err := readMGWebhookForm(r, "id", "url")
	if err != nil {
		return err
	}
	id := form.Get("id")
	if id == "" {
		return apperr.Field("id", "The id is required: one of "+fmt.Sprint(mailgun.WebhookIDs)+".")
	}
	if _, err := s.Webhooks.SetMailgunWebhook(r.Context(), d.ID, id, nonNil(form["url"]), webhook.MustBeNew); err != nil {
		return err
	}
	return s.answerMGWebhook(w, r, d.ID, id, "Webhook has been created", nil)
}

// handleMailgunWebhookGet is GET /v3/domains/{domain}/webhooks/{id}.
func (s *Server) handleMailgunWebhookGet(w http.ResponseWriter, r *http.Request, p account.Principal) error {
	domainID, id, err := s.mgWebhookTarget(r, p)
	if err != nil {
		return err
	}
	return s.answerMGWebhook(w, r, domainID, id, "", nil)
}

// handleMailgunWebhookUpdate is PUT /v3/domains/{domain}/webhooks/{id}:
// the id's URLs become the url values.
func (s *Server) handleMailgunWebhookUpdate(w http.ResponseWriter, r *http.Request, p account.Principal) error {
	domainID, id, err := s.mgWebhookTarget(r, p)
	if err != nil {
		return err
	}
	form, err := readMGWebhookForm(r, "url")
	if err != nil {
		return err
	}
	if _, err := s.Webhooks.SetMailgunWebhook(r.Context(), domainID, id, nonNil(form["url"]), webhook.MustExist); err != nil {
		return err
	}
	return s.answerMGWebhook(w, r, domainID, id, "Webhook has been updated", nil)
}

// handleMailgunWebhookDelete is DELETE /v3/domains/{domain}/webhooks/{id}:
// the answer names the URLs it had.
func (s *Server) handleMailgunWebhookDelete(w http.ResponseWriter, r *http.Request, p account.Principal) error {
	domainID, id, err := s.mgWebhookTarget(r, p)
	if err != nil {
		return err
	}
	had, err := s.Webhooks.SetMailgunWebhook(r.Context(), domainID, id, nil, webhook.MustExist)
	if err != nil {
		return err
	}
	return s.answerMGWebhook(w, r, domainID, id, "Webhook has been deleted", had)
}

// answerMGWebhook writes {"message"?, "webhook": {"urls"}}: the id's URLs
// now, or urls when given (a deleted id's).
func (s *Server) answerMGWebhook(w http.ResponseWriter, r *http.Request, domainID int64, id, message string, urls []string) error {
	if urls == nil {
		hooks, err := s.Webhooks.MailgunWebhooks(r.Context(), domainID)
		if err != nil {
			return err
		}
		if urls = hooks[id]; len(urls) == 0 {
			return webhook.ErrMailgunNotFound
		}
	}
	out := map[string]any{"webhook": map[string]any{"urls": urls}}
	if message != "" {
		out["message"] = message
	}
	writeJSON(w, http.StatusOK, out)
	return nil
}

// mgWebhookTarget is the caller's domain of the path (404 for another
// account's) and the path's webhook id.
func (s *Server) mgWebhookTarget(r *http.Request, p account.Principal) (int64, string, error) {
	d, err := s.mailgunDomain(r, p)
	if err != nil {
		return 0, "", err
	}
	id, err := mgWebhookID(r)
	return d.ID, id, err
}

// mgWebhookID is the path's {id} when it is one of Mailgun's.
func mgWebhookID(r *http.Request) (string, error) {
	id := r.PathValue("id")
	if !mailgun.ValidWebhookID(id) {
		return "", apperr.Field("id", fmt.Sprintf("Unknown webhook id %s; the ids are %v.", strconv.Quote(id), mailgun.WebhookIDs))
	}
	return id, nil
}

// readMGWebhookForm reads a urlencoded or multipart form of the allowed
// parameters (the query's too, as Mailgun takes them there); any other
// is refused, naming it.
func readMGWebhookForm(r *http.Request, allowed ...string) (url.Values, error) {
	mt, _, _ := mime.ParseMediaType(r.Header.Get("Content-Type"))
	var form url.Values
	switch mt {
	case "multipart/form-data":
		if err := r.ParseMultipartForm(1 << 20); err != nil {
			return nil, tooLargeOr(err, apperr.Field("body", "The multipart body is malformed."))
		}
		form = r.Form
	default:
		if err := r.ParseForm(); err != nil {
			return nil, tooLargeOr(err, apperr.Field("body", "The form body is malformed."))
		}
		form = r.Form
	}
	fe := apperr.FieldErrors{}
	for name := range form {
		ok := false
		for _, a := range allowed {
			ok = ok || name == a
		}
		if !ok {
			fe.Add(name, "Unknown parameter "+strconv.Quote(name)+".")
		}
	}
	return form, fe.Err()
}

// nonNil keeps "no url given" apart from "delete" for SetMailgunWebhook.
func nonNil(v []string) []string {
	if v == nil {
		return []string{}
	}
	return v
}
