package console

import (
	"context"
	"errors"
	"html"
	"mime"
	"net/http"
	"net/url"
	"strings"

	"github.com/postline/postline/internal/account"
	"github.com/postline/postline/internal/apperr"
	"github.com/postline/postline/internal/domain"
	"github.com/postline/postline/internal/receiving"
	"github.com/postline/postline/internal/sending"
)

// Rebuilder builds one recipient's copy of a sent message from what was
// accepted, as a delivery does, unsigned (*sending.Worker).
type Rebuilder interface {
	Rebuild(ctx context.Context, domainID int64, messageID, recipient string) (sending.Copy, error)
}

// sentCopy is a message page's content: one recipient's copy, parsed.
type sentCopy struct {
	Copy   sending.Copy
	Parsed receiving.Parsed
	Base   string // the message's page
	Query  string // ?recipient=...: the copy's parts name their recipient
	Frame  mailFrame
	// Gone says why there is no copy to show ("" when there is one).
	Gone string
}

// messagePath is the page of message id of d.
func messagePath(d domain.Domain, id string) string {
	return "/domains/" + d.Name + "/messages/" + url.PathEscape(id)
}

// sentMessage rebuilds the copy the request asks for (?recipient=, the
// first recipient's by default) of the signed-in account's message.
func (c *Console) sentMessage(r *http.Request, s *account.Session) (domain.Domain, sending.Copy, error) {
	d, err := c.deps.Domains.Owned(r.Context(), s.AccountID, r.PathValue("name"))
	if err != nil {
		return d, sending.Copy{}, err
	}
	if c.deps.Copies == nil {
		return d, sending.Copy{}, apperr.Errorf(apperr.NotFound, "no copies")
	}
	cp, err := c.deps.Copies.Rebuild(r.Context(), d.ID, r.PathValue("id"), strings.TrimSpace(r.URL.Query().Get("recipient")))
	return d, cp, err
}

// messageCopy is the content shown on a message's page; an error only
// for a fault (a copy that cannot be had says why in Gone).
func (c *Console) messageCopy(r *http.Request, s *account.Session, d domain.Domain, id string) (*sentCopy, error) {
	out := &sentCopy{Base: messagePath(d, id)}
	_, cp, err := c.sentMessage(r, s)
	switch {
	case errors.Is(err, sending.ErrPruned):
		out.Gone = "Its content is no longer kept: Postline keeps it as long as the message's log entries."
		return out, nil
	case apperr.CodeOf(err) == apperr.NotFound:
		out.Gone = "There is no copy to show: no delivery was made for this message (its recipients were suppressed), or no such recipient."
		return out, nil
	case err != nil:
		return nil, err
	}
	out.Copy, out.Parsed = cp, receiving.Parse(cp.Raw)
	q := url.Values{"recipient": {cp.Recipient}}
	out.Query = query(q)
	out.Frame = newMailFrame(r, out.Base, q, out.Parsed.BodyHTML != "")
	return out, nil
}

// messageHTML serves a sent copy's HTML for its page's frame, inline
// images as data: URLs, without the open-tracking pixel: viewing the
// page must not count an open.
func (c *Console) messageHTML(w http.ResponseWriter, r *http.Request, s *account.Session) error {
	_, cp, err := c.sentMessage(r, s)
	if err != nil {
		return err
	}
	p := receiving.Parse(cp.Raw)
	body := inlineImages(p.BodyHTML, cp.Raw, p.Attachments)
	if cp.OpenURL != "" {
		body = strings.ReplaceAll(body, html.EscapeString(cp.OpenURL), "data:,")
		body = strings.ReplaceAll(body, cp.OpenURL, "data:,")
	}
	serveMailHTML(w, r, body)
	return nil
}

// messageRaw downloads a sent copy as Postline builds it for its
// recipient (X-Postline-Rebuilt: the DKIM signature is not kept).
func (c *Console) messageRaw(w http.ResponseWriter, r *http.Request, s *account.Session) error {
	_, cp, err := c.sentMessage(r, s)
	if errors.Is(err, sending.ErrPruned) {
		c.render(w, r, http.StatusNotFound, "notfound", view{Title: "No longer kept", Session: s,
			Data: map[string]any{"Message": "This message's content is no longer kept: Postline keeps it as long as its log entries."}})
		return nil
	}
	if err != nil {
		return err
	}
	writeRebuilt(w, r.PathValue("id"), cp.Raw)
	return nil
}

// writeRebuilt answers a rebuilt copy as a message/rfc822 download named
// after the message id.
func writeRebuilt(w http.ResponseWriter, id string, raw []byte) {
	h := w.Header()
	h.Set("Content-Type", "message/rfc822")
	h.Set("Content-Disposition", mime.FormatMediaType("attachment", map[string]string{"filename": id + ".eml"}))
	h.Set("Cache-Control", "no-store")
	h.Set("X-Postline-Rebuilt", "true")
	w.WriteHeader(http.StatusOK)
	w.Write(raw) //nolint:errcheck // the client may be gone
}

// messageAttachment downloads one attachment of a sent copy; never shown
// on the console's origin.
func (c *Console) messageAttachment(w http.ResponseWriter, r *http.Request, s *account.Session) error {
	_, cp, err := c.sentMessage(r, s)
	if err != nil {
		return err
	}
	return attachmentOf(w, r, cp.Raw)
}
