package httpapi

import (
	"fmt"
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

// inboundJSON is a domain's inbound settings as the API shows them.
type inboundJSON struct {
	Enabled bool `json:"enabled"`
	// Receiving is true once mail is taken: enabled and verified.
	Receiving bool `json:"receiving"`
	// MXHost is the host the domain's MX record names; null when the
	// operator set neither --inbound-mx-host nor --public-url.
	MXHost *string `json:"mx_host"`
}

func (s *Server) inboundView(d domain.Domain) inboundJSON {
	return inboundJSON{Enabled: d.Inbound, Receiving: d.Receives(), MXHost: optional(s.Domains.InboundMXHost())}
}

// handleSetInbound turns receiving on or off for a domain.
func (s *Server) handleSetInbound(w http.ResponseWriter, r *http.Request, p account.Principal) error {
	var in struct {
		Enabled *bool `json:"enabled"`
	}
	if err := decodeJSON(r, &in); err != nil {
		return err
	}
	if in.Enabled == nil {
		return fieldRequired("enabled")
	}
	d, err := s.Domains.Owned(r.Context(), p.AccountID, r.PathValue("domain"))
	if err != nil {
		return err
	}
	if d, err = s.Domains.SetInbound(r.Context(), d, *in.Enabled); err != nil {
		return err
	}
	msg := fmt.Sprintf("%s no longer receives mail.", d.Name)
	switch {
	case d.Receives():
		msg = fmt.Sprintf("%s receives mail: routes decide what becomes of it.", d.Name)
	case d.Inbound:
		msg = fmt.Sprintf("Inbound is on for %s; it receives mail once verified.", d.Name)
	}
	if d.Inbound && s.Domains.InboundMXHost() == "" {
		msg += " The server has no MX host to publish (--inbound-mx-host): ask its operator."
	}
	writeJSON(w, http.StatusOK, map[string]any{"success": true, "message": msg, "data": s.domainView(d, nil)})
	return nil
}

// Paging of GET /api/domains/{domain}/inbound.
const (
	inboundDefaultLimit = 100
	inboundMaxLimit     = 1000
	inboundMaxOffset    = 1_000_000
)

// inboundListJSON is a stored message in a list.
type inboundListJSON struct {
	ID         string   `json:"id"`
	Recipient  string   `json:"recipient"`
	Sender     string   `json:"sender"`
	From       string   `json:"from"`
	Subject    string   `json:"subject"`
	ReceivedAt string   `json:"received_at"`
	Size       int64    `json:"size"`
	Routes     []string `json:"routes"`
}

func inboundListView(m receiving.Message) inboundListJSON {
	routes := m.Routes
	if routes == nil {
		routes = []string{}
	}
	return inboundListJSON{ID: m.ID, Recipient: m.Recipient, Sender: m.Sender, From: m.From, Subject: m.Subject,
		ReceivedAt: timeJSON(m.ReceivedAt), Size: m.Size, Routes: routes}
}

// parseInboundQuery reads the list's filters and paging, naming every bad
// parameter.
func parseInboundQuery(r *http.Request, domainID int64) (receiving.Filter, error) {
	q := r.URL.Query()
	f := receiving.Filter{DomainID: domainID, Limit: inboundDefaultLimit}
	fe := apperr.FieldErrors{}
	bad := func(field, msg string) { fe.Add(field, msg) }
	f.Start = parseTimeParam(q, "start", false, bad)
	f.End = parseTimeParam(q, "end", true, bad)
	if !f.Start.IsZero() && !f.End.IsZero() && f.End.Before(f.Start) {
		bad("end", "The end must not be before the start.")
	}
	for _, p := range []struct {
		name string
		dst  *string
	}{{"recipient", &f.Recipient}, {"sender", &f.Sender}, {"subject", &f.Subject}} {
		*p.dst = q.Get(p.name)
		if len(*p.dst) > maxFilterLen || strings.ContainsRune(*p.dst, 0) {
			bad(p.name, fmt.Sprintf("The %s filter must be at most %d characters, without NUL.", p.name, maxFilterLen))
		}
	}
	for _, p := range []struct {
		name    string
		lo, hi  int
		dst     *int
		message string
	}{{"limit", 1, inboundMaxLimit, &f.Limit, "The limit must be an integer from 1 to %d."},
		{"offset", 0, inboundMaxOffset, &f.Offset, "The offset must be an integer from 0 to %d."}} {
		if v := q.Get(p.name); v != "" {
			n, err := strconv.Atoi(v)
			if err != nil || n < p.lo || n > p.hi {
				bad(p.name, fmt.Sprintf(p.message, p.hi))
			}
			*p.dst = n
		}
	}
	return f, fe.Err()
}

func (s *Server) handleListInbound(w http.ResponseWriter, r *http.Request, p account.Principal) error {
	d, err := s.Domains.Owned(r.Context(), p.AccountID, r.PathValue("domain"))
	if err != nil {
		return err
	}
	f, err := parseInboundQuery(r, d.ID)
	if err != nil {
		return err
	}
	list, total, err := s.Receiving.List(r.Context(), f)
	if err != nil {
		return err
	}
	out := make([]inboundListJSON, len(list))
	for i, m := range list {
		out[i] = inboundListView(m)
	}
	writeJSON(w, http.StatusOK, map[string]any{"success": true, "data": out, "count": total, "offset": f.Offset, "limit": f.Limit})
	return nil
}

// storedMessage finds the caller's domain and its stored message.
func (s *Server) storedMessage(r *http.Request, p account.Principal) (domain.Domain, receiving.Message, error) {
	d, err := s.Domains.Owned(r.Context(), p.AccountID, r.PathValue("domain"))
	if err != nil {
		return d, receiving.Message{}, err
	}
	m, err := s.Receiving.Get(r.Context(), d.ID, r.PathValue("id"))
	return d, m, err
}

// handleGetInbound shows a stored message as Mailgun's forwards and
// stored-message API present one (its field names), with the
// authentication results and links to the raw message and attachments.
func (s *Server) handleGetInbound(w http.ResponseWriter, r *http.Request, p account.Principal) error {
	d, m, err := s.storedMessage(r, p)
	if err != nil {
		return err
	}
	parsed := receiving.Parse(m.Raw)
	base := s.publicBase(r) + "/api/domains/" + url.PathEscape(d.Name) + "/inbound/" + m.ID
	headers := make([][2]string, len(parsed.Headers))
	copy(headers, parsed.Headers)
	attURL := func(a receiving.Attachment) string { return base + "/attachments/" + strconv.Itoa(a.Index) }
	atts := make([]map[string]any, len(parsed.Attachments))
	for i, a := range parsed.Attachments {
		atts[i] = map[string]any{"index": a.Index, "filename": a.Filename, "content-type": a.ContentType, "size": a.Size,
			"content-id": a.ContentID, "inline": a.Inline, "url": attURL(a)}
	}
	cids := parsed.ContentIDMap(attURL)
	v := inboundListView(m)
	writeJSON(w, http.StatusOK, map[string]any{"success": true, "data": map[string]any{
		"id": v.ID, "recipient": v.Recipient, "sender": v.Sender, "from": v.From, "subject": v.Subject,
		"received_at": v.ReceivedAt, "timestamp": m.ReceivedAt.Unix(), "size": v.Size, "routes": v.Routes,
		"message-id": m.MessageID, "body-plain": parsed.BodyPlain, "body-html": parsed.BodyHTML, "message-headers": headers,
		"attachment-count": len(atts), "attachments": atts, "content-id-map": cids, "auth": m.Auth, "raw_url": base + "/raw",
	}})
	return nil
}

// handleGetInboundRaw answers the stored message as received (our
// Authentication-Results and Received fields on top).
func (s *Server) handleGetInboundRaw(w http.ResponseWriter, r *http.Request, p account.Principal) error {
	_, m, err := s.storedMessage(r, p)
	if err != nil {
		return err
	}
	w.Header().Set("Content-Type", "message/rfc822")
	w.Header().Set("Content-Disposition", mime.FormatMediaType("attachment", map[string]string{"filename": m.ID + ".eml"}))
	w.Header().Set("X-Content-Type-Options", "nosniff")
	w.Header().Set("Content-Length", strconv.Itoa(len(m.Raw)))
	w.WriteHeader(http.StatusOK)
	w.Write(m.Raw) //nolint:errcheck // the client may be gone
	return nil
}

// handleGetInboundAttachment answers one attachment's bytes, always as a
// download: a sender chose them, and they must never render on this
// origin.
func (s *Server) handleGetInboundAttachment(w http.ResponseWriter, r *http.Request, p account.Principal) error {
	_, m, err := s.storedMessage(r, p)
	if err != nil {
		return err
	}
	n, err := strconv.Atoi(r.PathValue("n"))
	if err != nil {
		return apperr.Errorf(apperr.NotFound, "attachment not found")
	}
	a, body, ok := receiving.Part(m.Raw, n)
	if !ok {
		return apperr.Errorf(apperr.NotFound, "attachment not found")
	}
	writeAttachment(w, a, body)
	return nil
}

// writeAttachment sends a stored message's attachment as a download.
func writeAttachment(w http.ResponseWriter, a receiving.Attachment, body []byte) {
	name := a.Filename
	if name == "" {
		name = "attachment-" + strconv.Itoa(a.Index)
	}
	w.Header().Set("Content-Type", "application/octet-stream")
	w.Header().Set("Content-Disposition", mime.FormatMediaType("attachment", map[string]string{"filename": name}))
	w.Header().Set("X-Content-Type-Options", "nosniff")
	w.Header().Set("Content-Length", strconv.Itoa(len(body)))
	w.WriteHeader(http.StatusOK)
	w.Write(body) //nolint:errcheck // the client may be gone
}
