package httpapi

import (
	"net/http"
	"strconv"

	"github.com/postline/postline/internal/apperr"

	"github.com/postline/postline/internal/account"
	"github.com/postline/postline/internal/webhook"
)

type webhookJSON struct {
	ID            int64    `json:"id"`
	URL           string   `json:"url"`
	EventTypes    []string `json:"event_types"`
	CreatedAt     string   `json:"created_at"`
	Secret        string   `json:"secret,omitempty"` // at creation only
	LastEventID   int64    `json:"last_event_id"`
	Failures      int      `json:"failures"`
	LastError     *string  `json:"last_error"`
	NextAttemptAt *string  `json:"next_attempt_at"` // set while failing
	LastSuccessAt *string  `json:"last_success_at"`
	Unreadable    string   `json:"unreadable,omitempty"`    // set when the secret does not decrypt
	Format        string   `json:"format"`                  // postline or mailgun
	MailgunEvent  string   `json:"mailgun_event,omitempty"` // the Mailgun webhook id of a mailgun one
}

func webhookView(w webhook.Webhook, withSecret bool) webhookJSON {
	v := webhookJSON{ID: w.ID, URL: w.URL, EventTypes: []string{}, CreatedAt: timeJSON(w.CreatedAt), LastEventID: w.Cursor,
		Failures: w.Attempts, LastError: optional(w.LastError), Unreadable: w.Unreadable, Format: w.Format, MailgunEvent: w.MailgunEvent}
	for _, t := range w.EventTypes {
		v.EventTypes = append(v.EventTypes, string(t))
	}
	if withSecret {
		v.Secret = w.Secret
	}
	if w.Attempts > 0 {
		t := timeJSON(w.NextAttemptAt)
		v.NextAttemptAt = &t
	}
	if w.LastSuccessAt != nil {
		t := timeJSON(*w.LastSuccessAt)
		v.LastSuccessAt = &t
	}
	return v
}

func (s *Server) handleCreateWebhook(w http.ResponseWriter, r *http.Request, p account.Principal) error {
	var in struct {
		URL        string   `json:"url"`
		EventTypes []string `json:"event_types"`
	}
	if err := decodeJSON(r, &in); err != nil {
		return err
	}
	d, err := s.Domains.Owned(r.Context(), p.AccountID, r.PathValue("domain"))
	if err != nil {
		return err
	}
	wh, err := s.Webhooks.Create(r.Context(), d.ID, in.URL, in.EventTypes)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusCreated, map[string]any{"success": true,
		"message": "Webhook created; keep the secret, it is not shown again.", "data": webhookView(wh, true)})
	return nil
}

func (s *Server) handleListWebhooks(w http.ResponseWriter, r *http.Request, p account.Principal) error {
	d, err := s.Domains.Owned(r.Context(), p.AccountID, r.PathValue("domain"))
	if err != nil {
		return err
	}
	list, err := s.Webhooks.List(r.Context(), d.ID)
	if err != nil {
		return err
	}
	out := make([]webhookJSON, len(list))
	for i, wh := range list {
		out[i] = webhookView(wh, false)
	}
	writeJSON(w, http.StatusOK, map[string]any{"success": true, "data": out})
	return nil
}

func (s *Server) handleDeleteWebhook(w http.ResponseWriter, r *http.Request, p account.Principal) error {
	return s.deleteByID(w, r, p, "Webhook", s.Webhooks.Delete)
}

type webhookPostJSON struct {
	At         string  `json:"at"`
	Status     int     `json:"status"`
	Error      *string `json:"error"`
	Entries    int     `json:"entries"`
	DurationMS int64   `json:"duration_ms"`
}

// handleWebhookPosts is GET .../webhooks/{id}/posts: the newest posts and
// how each went.
func (s *Server) handleWebhookPosts(w http.ResponseWriter, r *http.Request, p account.Principal) error {
	id, err := strconv.ParseInt(r.PathValue("id"), 10, 64)
	if err != nil || id < 1 {
		return apperr.Field("id", "The id must be a positive integer.")
	}
	d, err := s.Domains.Owned(r.Context(), p.AccountID, r.PathValue("domain"))
	if err != nil {
		return err
	}
	posts, err := s.Webhooks.Posts(r.Context(), d.ID, id, webhook.KeptPosts)
	if err != nil {
		return err
	}
	out := make([]webhookPostJSON, len(posts))
	for i, po := range posts {
		out[i] = webhookPostJSON{At: timeJSON(po.At), Status: po.Status, Error: optional(po.Error), Entries: po.Entries,
			DurationMS: po.Duration.Milliseconds()}
	}
	writeJSON(w, http.StatusOK, map[string]any{"success": true, "data": out})
	return nil
}
