package console

import (
	"encoding/base64"
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
	c.render(w, r, http.StatusOK, "inbound", view{Title: m.Subject + " · " + d.Name, Session: s, Data: map[string]any{
		"Domain": d, "Message": m, "Parsed": p, "Base": "/domains/" + d.Name + "/inbound/" + m.ID}})
	return nil
}

// htmlFramePolicy is the Content Security Policy of a stored message's
// HTML: nothing loads from the network (tracking pixels and remote images
// stay dark), no script runs, and the document sits in a sandbox with an
// origin of its own, framed only by the console's own pages.
const htmlFramePolicy = "default-src 'none'; img-src data:; style-src 'unsafe-inline'; font-src data:; " +
	"base-uri 'none'; form-action 'none'; frame-ancestors 'self'; sandbox"

// inboundHTML serves a stored message's HTML body for the message page's
// frame; its inline images (cid:) become data: URLs, the only images the
// policy lets through.
func (c *Console) inboundHTML(w http.ResponseWriter, r *http.Request, s *account.Session) error {
	_, m, err := c.storedMessage(r, s)
	if err != nil {
		return err
	}
	p := receiving.Parse(m.Raw)
	html := inlineImages(p.BodyHTML, m.Raw, p.Attachments)
	h := w.Header()
	h.Set("Content-Security-Policy", htmlFramePolicy)
	h.Set("X-Frame-Options", "SAMEORIGIN")
	h.Set("Referrer-Policy", "no-referrer")
	h.Set("Cache-Control", "no-store")
	h.Set("Content-Type", "text/html; charset=utf-8")
	w.WriteHeader(http.StatusOK)
	w.Write([]byte(html)) //nolint:errcheck // the client may be gone
	return nil
}

// maxInlineImage bounds an inline image turned into a data: URL.
const maxInlineImage = 2 << 20

// inlineImages replaces cid: references to image parts with data: URLs.
func inlineImages(html string, raw []byte, atts []receiving.Attachment) string {
	for _, a := range atts {
		if a.ContentID == "" || !strings.HasPrefix(a.ContentType, "image/") || a.Size > maxInlineImage ||
			!strings.Contains(html, "cid:"+a.ContentID) {
			continue
		}
		_, body, ok := receiving.Part(raw, a.Index)
		if !ok {
			continue
		}
		html = strings.ReplaceAll(html, "cid:"+a.ContentID, "data:"+a.ContentType+";base64,"+base64.StdEncoding.EncodeToString(body))
	}
	return html
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
	n, err := strconv.Atoi(r.PathValue("n"))
	if err != nil {
		return apperr.Errorf(apperr.NotFound, "no attachment")
	}
	a, body, ok := receiving.Part(m.Raw, n)
	if !ok {
		return apperr.Errorf(apperr.NotFound, "no attachment")
	}
	name := a.Filename
	if name == "" {
		name = "attachment-" + strconv.Itoa(a.Index)
	}
	w.Header().Set("Content-Type", "application/octet-stream")
	w.Header().Set("Content-Disposition", mime.FormatMediaType("attachment", map[string]string{"filename": name}))
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(http.StatusOK)
	w.Write(body) //nolint:errcheck // the client may be gone
	return nil
}
