package console

import (
	"mime"
	"net/http"
	"net/url"
	"strconv"
	"strings"

	"github.com/postline/postline/internal/account"
	"github.com/postline/postline/internal/apperr"
	"github.com/postline/postline/internal/domain"
	"github.com/postline/postline/internal/receiving"
)

// inboundPageSize is the stored messages one list page shows.
const inboundPageSize = 50

// inboundList is a domain's stored received messages, newest first, with
// the API's filters, through the same service as GET .../inbound.
func (c *Console) inboundList(w http.ResponseWriter, r *http.Request, s *account.Session) error {
	d, err := c.deps.Domains.Owned(r.Context(), s.AccountID, r.PathValue("name"))
	if err != nil {
		return err
	}
	q := r.URL.Query()
	f := receiving.Filter{DomainID: d.ID, Limit: inboundPageSize, Recipient: strings.TrimSpace(q.Get("recipient")),
		Sender: strings.TrimSpace(q.Get("sender")), Subject: q.Get("subject")}
	var problems []string
	f.Start, f.End, problems = timeRange(q, problems)
	page, problems := pageNumber(q, 1000, problems)
	f.Offset = (page - 1) * inboundPageSize
	list, total, err := c.deps.Receiving.List(r.Context(), f)
	if err != nil {
		return err
	}
	link := func(p int) string {
		v := url.Values{}
		for k, vs := range q {
			v[k] = vs
		}
		v.Set("page", strconv.Itoa(p))
		return "?" + v.Encode()
	}
	c.render(w, r, http.StatusOK, "inboundlist", view{Title: "Received · " + d.Name, Session: s, Data: map[string]any{
		"Domain": d, "Messages": list, "Total": total, "Page": page, "Q": q, "Problems": problems,
		"HasNext": f.Offset+len(list) < total, "HasPrev": page > 1, "Next": link(page + 1), "Prev": link(page - 1),
		"Retention": c.deps.Receiving.Retention().String(),
	}})
	return nil
}

// storedMessage finds the signed-in account's domain and its message.
func (c *Console) storedMessage(r *http.Request, s *account.Session) (domain.Domain, receiving.Message, error) {
	d, err := c.deps.Domains.Owned(r.Context(), s.AccountID, r.PathValue("name"))
	if err != nil {
		return d, receiving.Message{}, err
	}
	m, err := c.deps.Receiving.Get(r.Context(), d.ID, r.PathValue("id"))
	return d, m, err
}

// inboundMessage shows one stored message: its facts, authentication
// results, text, HTML (in a sandboxed frame served by inboundHTML),
// header and attachments.
func (c *Console) inboundMessage(w http.ResponseWriter, r *http.Request, s *account.Session) error {
	d, m, err := c.storedMessage(r, s)
	if err != nil {
		return err
	}
	p := receiving.Parse(m.Raw)
	base := "/domains/" + d.Name + "/inbound/" + m.ID
	c.render(w, r, http.StatusOK, "inbound", view{Title: m.Subject + " · " + d.Name, Session: s, Data: map[string]any{
		"Domain": d, "Message": m, "Parsed": p, "Base": base, "Frame": newMailFrame(r, base, url.Values{}, p.BodyHTML != "")}})
	return nil
}

// inboundHTML serves a stored message's HTML body for the message page's
// frame (serveMailHTML).
func (c *Console) inboundHTML(w http.ResponseWriter, r *http.Request, s *account.Session) error {
	_, m, err := c.storedMessage(r, s)
	if err != nil {
		return err
	}
	p := receiving.Parse(m.Raw)
	serveMailHTML(w, r, inlineImages(p.BodyHTML, m.Raw, p.Attachments))
	return nil
}

// inboundRaw downloads a stored message as received.
func (c *Console) inboundRaw(w http.ResponseWriter, r *http.Request, s *account.Session) error {
	_, m, err := c.storedMessage(r, s)
	if err != nil {
		return err
	}
	w.Header().Set("Content-Type", "message/rfc822")
	w.Header().Set("Content-Disposition", mime.FormatMediaType("attachment", map[string]string{"filename": m.ID + ".eml"}))
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(http.StatusOK)
	w.Write(m.Raw) //nolint:errcheck // the client may be gone
	return nil
}

// inboundAttachment downloads one attachment; a sender chose its bytes
// and its type, so it is never shown on the console's origin.
func (c *Console) inboundAttachment(w http.ResponseWriter, r *http.Request, s *account.Session) error {
	_, m, err := c.storedMessage(r, s)
	if err != nil {
		return err
	}
	return attachmentOf(w, r, m.Raw)
}

// attachmentOf writes the attachment the path's {n} names of the message
// raw as a download; NotFound when it has none such.
func attachmentOf(w http.ResponseWriter, r *http.Request, raw []byte) error {
	n, err := strconv.Atoi(r.PathValue("n"))
	if err != nil {
		return apperr.Errorf(apperr.NotFound, "no attachment")
	}
	a, body, ok := receiving.Part(raw, n)
	if !ok {
		return apperr.Errorf(apperr.NotFound, "no attachment")
	}
	writeAttachment(w, a, body)
	return nil
}

// writeAttachment answers a message's part as a download: a sender chose
// its bytes and its type, so it is never shown on the console's origin.
func writeAttachment(w http.ResponseWriter, a receiving.Attachment, body []byte) {
	name := a.Filename
	if name == "" {
		name = "attachment-" + strconv.Itoa(a.Index)
	}
	w.Header().Set("Content-Type", "application/octet-stream")
	w.Header().Set("Content-Disposition", mime.FormatMediaType("attachment", map[string]string{"filename": name}))
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(http.StatusOK)
	w.Write(body) //nolint:errcheck // the client may be gone
}
