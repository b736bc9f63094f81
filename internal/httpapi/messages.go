package httpapi

import (
	"context"
	"mime"
	"net/http"
	"strconv"
	"strings"

	"github.com/postline/postline/internal/account"
	"github.com/postline/postline/internal/apperr"
	"github.com/postline/postline/internal/sending"
)

// handleGetMessage shows where a message's deliveries are: scheduled,
// pending, sending, deferred, delivered, failed, bounced or cancelled.
func (s *Server) handleGetMessage(w http.ResponseWriter, r *http.Request, p account.Principal) error {
	d, err := s.Domains.Owned(r.Context(), p.AccountID, r.PathValue("domain"))
	if err != nil {
		return err
	}
	ds, err := s.Sending.Message(r.Context(), d.ID, r.PathValue("id"))
	if err != nil {
		return err
	}
	rcpts := make([]map[string]any, len(ds))
	for i, m := range ds {
		v := map[string]any{"recipient": m.Recipient, "state": s.Sending.StateOf(m), "attempts": m.Attempts,
			"next_attempt_at": nil, "last_code": nil, "last_message": nil, "updated_at": timeJSON(m.UpdatedAt)}
		if m.State == sending.StatePending || m.State == sending.StateDeferred {
			v["next_attempt_at"] = timeJSON(m.NextAttemptAt)
		}
		if m.LastCode != 0 {
			v["last_code"], v["last_message"] = m.LastCode, m.LastMessage
		}
		rcpts[i] = v
	}
	first := ds[0]
	var deliverAt any
	if first.DeliverAt != nil {
		deliverAt = timeJSON(*first.DeliverAt)
	}
	writeJSON(w, http.StatusOK, map[string]any{"success": true, "data": map[string]any{"message_id": first.MessageID,
		"sender": first.Sender, "subject": first.Subject, "tags": first.Tags, "created_at": timeJSON(first.CreatedAt),
		"deliver_at": deliverAt, "recipients": rcpts}})
	return nil
}

// handleCancelMessage cancels a message's deliveries that were not sent
// yet (scheduled, queued or waiting for a retry).
func (s *Server) handleCancelMessage(w http.ResponseWriter, r *http.Request, p account.Principal) error {
	d, err := s.Domains.Owned(r.Context(), p.AccountID, r.PathValue("domain"))
	if err != nil {
		return err
	}
	ds, err := s.Sending.Cancel(r.Context(), d.ID, r.PathValue("id"))
	if err != nil {
		return err
	}
	rcpts := make([]string, len(ds))
	for i, dl := range ds {
		rcpts[i] = dl.Recipient
	}
	writeJSON(w, http.StatusOK, map[string]any{"success": true, "message": "Cancelled; logged as failed with reason cancelled.",
		"data": map[string]any{"cancelled": len(ds), "recipients": rcpts}})
	return nil
}

// Rebuilder builds one recipient's copy of a sent message from what was
// accepted, as a delivery does, unsigned (*sending.Worker).
type Rebuilder interface {
	Rebuild(ctx context.Context, domainID int64, messageID, recipient string) (sending.Copy, error)
}

// handleGetMessageRaw answers a message as Postline builds it for one
// recipient (?recipient=, the first by default) from what it accepted:
// Postline does not keep the bytes it sent, and the DKIM signature, made
// at sending, is not kept (X-Postline-Rebuilt: true). Once the content is
// pruned with the log it is 404.
func (s *Server) handleGetMessageRaw(w http.ResponseWriter, r *http.Request, p account.Principal) error {
	d, err := s.Domains.Owned(r.Context(), p.AccountID, r.PathValue("domain"))
	if err != nil {
		return err
	}
	if s.Copies == nil {
		return apperr.Errorf(apperr.NotFound, "Message not found")
	}
	cp, err := s.Copies.Rebuild(r.Context(), d.ID, r.PathValue("id"), strings.TrimSpace(r.URL.Query().Get("recipient")))
	if err != nil {
		return err
	}
	h := w.Header()
	h.Set("Content-Type", "message/rfc822")
	h.Set("Content-Disposition", mime.FormatMediaType("attachment", map[string]string{"filename": r.PathValue("id") + ".eml"}))
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("X-Postline-Rebuilt", "true")
	h.Set("X-Postline-Recipient", cp.Recipient)
	h.Set("Content-Length", strconv.Itoa(len(cp.Raw)))
	w.WriteHeader(http.StatusOK)
	w.Write(cp.Raw) //nolint:errcheck // the client may be gone
	return nil
}
