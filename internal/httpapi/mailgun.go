package httpapi

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"mime"
	"net/http"
	"net/mail"
	"net/url"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/postline/postline/internal/account"
	"github.com/postline/postline/internal/apperr"
	"github.com/postline/postline/internal/domain"
	"github.com/postline/postline/internal/sending"
)

// Mailgun's v3 API, as its public reference describes it, over the same
// services as /api/: software with a Mailgun driver moves by changing its
// base URL and key. Differences and what is not supported are in the
// README's compatibility table; a parameter that is not supported is a 400
// naming it, never dropped.

// authenticateMailgun takes Mailgun's Basic scheme: user "api" and an API
// key as the password; the key names its account.
func (s *Server) authenticateMailgun(r *http.Request) (account.Principal, error) {
	h := r.Header.Get("Authorization")
	scheme, cred, _ := strings.Cut(h, " ")
	raw, err := base64.StdEncoding.DecodeString(strings.TrimSpace(cred))
	user, key, ok := strings.Cut(string(raw), ":")
	if h == "" || !strings.EqualFold(scheme, "Basic") || err != nil || !ok || user != "api" || key == "" {
		return account.Principal{}, apperr.Errorf(apperr.Unauthorized, "Forbidden: use Basic authentication with the user api and an API key")
	}
	return s.Accounts.AuthenticateKey(r.Context(), key)
}

// mailgunDomain is the path's {domain} when it is the caller's; any other
// is Mailgun's 404.
func (s *Server) mailgunDomain(r *http.Request, p account.Principal) (domain.Domain, error) {
	d, err := s.Domains.Owned(r.Context(), p.AccountID, r.PathValue("domain"))
	if apperr.CodeOf(err) == apperr.NotFound {
		return d, apperr.Errorf(apperr.NotFound, "Domain not found: %s", r.PathValue("domain"))
	}
	return d, err
}

// mailgunMessage is the one-line message of Mailgun's error body; field
// errors name their Mailgun parameter.
func mailgunMessage(e *apperr.Error) string {
	if len(e.Fields) == 0 {
		return e.Message
	}
	var parts []string
	for _, f := range sortedFields(e.Fields) {
		parts = append(parts, mailgunParam(f)+": "+strings.Join(e.Fields[f], " "))
	}
	return strings.Join(parts, "; ")
}

func sortedFields(m map[string][]string) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// mailgunParam names a sending field as Mailgun's parameter.
func mailgunParam(field string) string {
	switch {
	case field == "recipient_variables" || strings.HasPrefix(field, "recipient_variables."):
		return "recipient-variables" + strings.TrimPrefix(field, "recipient_variables")
	case field == "variables":
		return "t:variables"
	case field == "template_version":
		return "t:version"
	case field == "deliver_at":
		return "o:deliverytime"
	case field == "tags":
		return "o:tag"
	case field == "reply_to":
		return "h:Reply-To"
	case field == "sender":
		return "h:Sender"
	case field == "list_unsubscribe":
		return "h:List-Unsubscribe"
	case field == "list_unsubscribe_post":
		return "h:List-Unsubscribe-Post"
	case field == "message_id":
		return "h:Message-Id"
	case strings.HasPrefix(field, "attachments"):
		return "attachment" + strings.TrimPrefix(field, "attachments")
	case strings.HasPrefix(field, "headers."):
		return "h:" + strings.TrimPrefix(field, "headers.")
	}
	return field
}

// mailgunHeaders are the h: headers passed as they are; Reply-To becomes
// the reply-to field. Headers the service generates or a receiver trusts
// are refused by the send itself, naming them.
var mailgunUnsupported = map[string]string{
	"inline":   "inline images are not supported yet; send them as attachments",
	"o:dkim":   "every message is DKIM-signed with the domain's key",
	"amp-html": "AMP is not supported",
}

// handleMailgunSend is POST /v3/{domain}/messages.
func (s *Server) handleMailgunSend(w http.ResponseWriter, r *http.Request, p account.Principal) error {
	d, err := s.mailgunDomain(r, p)
	if err != nil {
		return err
	}
	parts := s.parts(r.Context())
	defer parts.close()
	form, files, err := readMailgunForm(r, s.Sending.Limits().MaxAttachmentBytes, parts)
	if err != nil {
		return err
	}
	req, err := mailgunRequest(form, files)
	if err != nil {
		return err
	}
	req.Senders = s.senderDomains(p)
	acc, err := s.Sending.Accept(r.Context(), d, p.AccountID, req)
	if err != nil {
		return err
	}
	// Mailgun's one id of every copy, also when every recipient was
	// suppressed (their failed entries carry it).
	writeJSON(w, http.StatusOK, map[string]any{"id": "<" + acc.MessageID + ">", "message": "Queued. Thank you."})
	return nil
}

// readMailgunForm reads a multipart or urlencoded body: values by name,
// and the attachment files.
func readMailgunForm(r *http.Request, maxFile int64, parts *parts) (url.Values, []sending.Attachment, error) {
	mt, _, _ := mime.ParseMediaType(r.Header.Get("Content-Type"))
	switch mt {
	case "application/x-www-form-urlencoded":
		if err := r.ParseForm(); err != nil {
			return nil, nil, tooLargeOr(err, apperr.Field("body", "The form body is malformed."))
		}
		return r.PostForm, nil, nil
	case "multipart/form-data":
	default:
		return nil, nil, apperr.Field("body", "The request must be multipart/form-data or application/x-www-form-urlencoded.")
	}
	mr, err := r.MultipartReader()
	if err != nil {
		return nil, nil, apperr.Field("body", "The multipart body is malformed.")
	}
	form := url.Values{}
	var files []sending.Attachment
	for n := 0; ; n++ {
		part, err := mr.NextPart()
		if err == io.EOF {
			return form, files, nil
		}
		if err != nil {
			return nil, nil, tooLargeOr(err, apperr.Field("body", "The multipart body is malformed."))
		}
		name, err := partName(part, n)
		if err != nil {
			return nil, nil, err
		}
		if part.FileName() != "" || name == "attachment" || name == "inline" {
			if name != "attachment" && name != "inline" {
				form.Add(name, part.FileName()) // refused by mailgunRequest, naming it
				continue
			}
			data, err := parts.read(part, fmt.Sprintf("attachments.%d", len(files)), maxFile)
			if err != nil {
				return nil, nil, err
			}
			f := sending.Attachment{Filename: part.FileName(), ContentType: fileType(part, data), Data: data}
			if name == "inline" { // Mailgun's: the HTML refers to it as cid:FILENAME
				f.ContentID = part.FileName()
			}
			files = append(files, f)
			continue
		}
		data, err := parts.read(part, name, fieldLimit(name))
		if err != nil {
			return nil, nil, err
		}
		form.Add(name, string(data))
	}
}

// mailgunRequest turns Mailgun's parameters into a send request.
func mailgunRequest(form url.Values, files []sending.Attachment) (sending.Request, error) {
	req := sending.Request{To: form["to"], Cc: form["cc"], Bcc: form["bcc"], Subject: form.Get("subject"), Text: form.Get("text"),
		HTML: form.Get("html"), Template: form.Get("template"), TemplateVersion: form.Get("t:version"),
		Variables: form.Get("t:variables"), RecipientVariables: form.Get("recipient-variables"), Attachments: files, Percent: true,
		OneMessageID: true, TemplateByTag: true}
	fe := apperr.FieldErrors{}
	if from := form.Get("from"); from != "" {
		if a, err := mail.ParseAddress(from); err == nil {
			req.From, req.FromName = a.Address, a.Name
		} else {
			req.From = from
		}
	}
	headers := map[string]string{}
	userVars := map[string]any{}
	for _, name := range sortedKeys(form) {
		v := form.Get(name)
		switch {
		case slices.Contains([]string{"from", "to", "cc", "bcc", "subject", "text", "html", "template", "t:version", "t:variables", "recipient-variables"}, name):
		case mailgunUnsupported[name] != "":
			fe.Add(name, "Not supported: "+mailgunUnsupported[name]+".")
		case name == "o:testmode":
			on, err := yesNo(v)
			if err != nil {
				fe.Add(name, "The o:testmode "+err.Error()+".")
			}
			req.TestMode = on
		case name == "o:tag":
			if len(form[name]) > 10 {
				fe.Add("o:tag", "At most 10 o:tag values.")
			}
			req.Tags = strings.Join(form[name], ",")
		case name == "o:deliverytime":
			t, err := mail.ParseDate(v)
			if err != nil {
				fe.Add(name, "The o:deliverytime must be an RFC 2822 date, e.g. Fri, 14 Oct 2026 09:00:00 +0000.")
				continue
			}
			req.DeliverAt = t.UTC().Format(time.RFC3339)
		case name == "o:tracking" || name == "o:tracking-opens" || name == "o:tracking-clicks":
			on, err := yesNo(v)
			if err != nil {
				fe.Add(name, "The "+name+" "+err.Error()+".")
				continue
			}
			if name != "o:tracking-clicks" && (name != "o:tracking" || form.Get("o:tracking-opens") == "") {
				req.TrackOpens = &on
			}
			if name != "o:tracking-opens" && (name != "o:tracking" || form.Get("o:tracking-clicks") == "") {
				req.TrackClicks = &on
			}
		case strings.HasPrefix(name, "h:"):
			h := name[2:]
			switch {
			case strings.EqualFold(h, "Sender"):
				req.Sender = v
				if a, err := mail.ParseAddress(v); err == nil {
					req.Sender = a.Address
				}
				continue
			case strings.EqualFold(h, "List-Unsubscribe"):
				req.ListUnsubscribe = v
				continue
			case strings.EqualFold(h, "List-Unsubscribe-Post"):
				req.ListUnsubscribePost = v
				continue
			case strings.EqualFold(h, "Message-Id"):
				req.MessageID = v // the sending service checks it
				continue
			}
			if strings.EqualFold(h, "Reply-To") {
				req.ReplyTo = v
				if a, err := mail.ParseAddress(v); err == nil {
					req.ReplyTo = a.Address
				}
				continue
			}
			headers[h] = v
		case strings.HasPrefix(name, "v:"):
			userVars[name[2:]] = mgUserVariable(v)
		default:
			fe.Add(name, fmt.Sprintf("Unknown parameter %q.", name))
		}
	}
	if len(userVars) > 0 {
		b, _ := json.Marshal(userVars)
		headers["X-Mailgun-Variables"] = string(b) // as Mailgun writes them into the message
	}
	if len(headers) > 0 {
		b, _ := json.Marshal(headers)
		req.Headers = string(b)
	}
	return req, fe.Err()
}

// mgUserVariable is a v: value as kept: a JSON object or array as the
// structure it encodes, anything else the string sent ("42" stays "42",
// "true" stays "true"). %recipient.KEY% in it is substituted per
// recipient by the sending service.
func mgUserVariable(v string) any {
	if t := strings.TrimSpace(v); strings.HasPrefix(t, "{") || strings.HasPrefix(t, "[") {
		dec := json.NewDecoder(strings.NewReader(t))
		dec.UseNumber()
		var parsed any
		if dec.Decode(&parsed) == nil && !dec.More() {
			return parsed
		}
	}
	return v
}

func yesNo(v string) (bool, error) {
	switch strings.ToLower(strings.TrimSpace(v)) {
	case "yes", "true":
		return true, nil
	case "no", "false":
		return false, nil
	case "htmlonly":
		return true, nil
	}
	return false, fmt.Errorf("must be yes, no, true, false or htmlonly, got %q", v)
}

func sortedKeys(m url.Values) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// senderDomains lists the account's domains the key may use, for the
// sender rules of sending (From, Sender, Resent-From, Resent-Sender).
func (s *Server) senderDomains(p account.Principal) sending.SenderDomains {
	return func(ctx context.Context) ([]domain.Domain, error) {
		all, err := s.Domains.List(ctx, p.AccountID)
		if err != nil {
			return nil, err
		}
		var doms []domain.Domain
		for _, d := range all {
			if p.DomainAllowed(d.Name) {
				doms = append(doms, d)
			}
		}
		return doms, nil
	}
}

// mgDomain is a domain in Mailgun's shape; state "active" once verified.
func mgDomain(d domain.Domain) map[string]any {
	state := "unverified"
	if d.Verified() {
		state = "active"
	}
	return map[string]any{"name": d.Name, "state": state, "created_at": d.CreatedAt.UTC().Format(time.RFC1123Z),
		"type": "custom", "spam_action": "disabled", "wildcard": false, "require_tls": false, "skip_verification": false,
		"smtp_login": "", "web_scheme": "https", "web_prefix": "email", "id": fmt.Sprint(d.ID)}
}

// handleMailgunDomains is GET /v3/domains: the domains the key may use.
func (s *Server) handleMailgunDomains(w http.ResponseWriter, r *http.Request, p account.Principal) error {
	list, err := s.Domains.List(r.Context(), p.AccountID)
	if err != nil {
		return err
	}
	items := []map[string]any{}
	for _, d := range list {
		if p.DomainAllowed(d.Name) {
			items = append(items, mgDomain(d))
		}
	}
	writeJSON(w, http.StatusOK, map[string]any{"total_count": len(items), "items": items})
	return nil
}

// handleMailgunDomain is GET /v3/domains/{name}, with the DNS records to
// publish in Mailgun's shape ("valid" once the domain verified).
func (s *Server) handleMailgunDomain(w http.ResponseWriter, r *http.Request, p account.Principal) error {
	d, err := s.Domains.Owned(r.Context(), p.AccountID, r.PathValue("name"))
	if apperr.CodeOf(err) == apperr.NotFound || (err == nil && !p.DomainAllowed(d.Name)) {
		return apperr.Errorf(apperr.NotFound, "Domain not found")
	}
	if err != nil {
		return err
	}
	valid := "unknown"
	if d.Verified() {
		valid = "valid"
	}
	sending := []map[string]any{}
	receiving := []map[string]any{}
	for _, rec := range s.Domains.Records(d) {
		m := map[string]any{"record_type": rec.Type, "name": rec.Name, "value": rec.Value, "valid": valid, "cached": []string{}}
		if rec.Type == "MX" {
			// Mailgun's shape: the preference apart from the host.
			if pref, host, ok := strings.Cut(rec.Value, " "); ok {
				m["priority"], m["value"] = pref, host
			}
			receiving = append(receiving, m)
		} else {
			sending = append(sending, m)
		}
	}
	writeJSON(w, http.StatusOK, map[string]any{"domain": mgDomain(d), "sending_dns_records": sending, "receiving_dns_records": receiving})
	return nil
}

// mailgunDomainRoute takes GET /v3/domains/{name} from the list route.
func (s *Server) mailgunDomainRoute() alt {
	return alt{route: route{method: "GET", path: "/v3/domains/{name}", group: groupMailgun, scope: account.ScopeDomains,
		handler: s.handleMailgunDomain}, take: func(r *http.Request) bool {
		if r.PathValue("domain") != "domains" {
			return false
		}
		r.SetPathValue("name", r.PathValue("list"))
		r.SetPathValue("domain", "") // the domain is checked by the handler, with the key's limits
		return true
	}}
}

// handleMailgunMIME is POST /v3/{domain}/messages.mime: a message built by
// the client (the message part) sent as it is, like SMTP submission, to the
// recipients of to.
func (s *Server) handleMailgunMIME(w http.ResponseWriter, r *http.Request, p account.Principal) error {
	d, err := s.mailgunDomain(r, p)
	if err != nil {
		return err
	}
	parts := s.parts(r.Context())
	defer parts.close()
	form, raw, err := readMIMEForm(r, parts)
	if err != nil {
		return err
	}
	fe := apperr.FieldErrors{}
	m := sending.RawMessage{}
	for _, name := range sortedKeys(form) {
		switch v := form.Get(name); name {
		case "to":
			for _, entry := range form[name] {
				for _, a := range strings.Split(entry, ",") {
					if addr, err := mail.ParseAddress(strings.TrimSpace(a)); err == nil {
						m.Recipients = append(m.Recipients, addr.Address)
					} else if strings.TrimSpace(a) != "" {
						m.Recipients = append(m.Recipients, strings.TrimSpace(a))
					}
				}
			}
		case "o:tag":
			if len(form[name]) > 10 {
				fe.Add("o:tag", "At most 10 o:tag values.")
			}
			m.Tags = strings.Join(form[name], ",")
		case "o:deliverytime":
			t, err := mail.ParseDate(v)
			if err != nil {
				fe.Add(name, "The o:deliverytime must be an RFC 2822 date.")
				continue
			}
			m.DeliverAt = t.UTC().Format(time.RFC3339)
		default:
			fe.Add(name, fmt.Sprintf("Unknown or unsupported parameter %q for messages.mime.", name))
		}
	}
	if len(raw) == 0 {
		fe.Add("message", "The message part (the MIME message) is required.")
	}
	if err := fe.Err(); err != nil {
		return err
	}
	prep, err := s.Sending.PrepareRaw(r.Context(), sending.RawInput{Data: raw, Senders: s.senderDomains(p), Domain: &d})
	if err != nil {
		return err
	}
	if m.Tags == "" {
		m.Tags = strings.Join(prep.Tags, ",")
	}
	m.From, m.Data, m.MessageID, m.Subject, m.Track, m.HTML = prep.From[0], prep.Data, prep.MessageID, prep.Subject, prep.Track, prep.HTML
	if m.DeliverAt == "" {
		m.DeliverAt = prep.DeliverAt
	}
	if _, err := s.Sending.AcceptRaw(r.Context(), d, p.AccountID, m); err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, map[string]any{"id": "<" + m.MessageID + ">", "message": "Queued. Thank you."})
	return nil
}

// readMIMEForm reads the multipart body of messages.mime: the message
// part (a file or a field) and the other values.
func readMIMEForm(r *http.Request, parts *parts) (url.Values, []byte, error) {
	mr, err := r.MultipartReader()
	if err != nil {
		return nil, nil, apperr.Field("body", "The request must be multipart/form-data with a message part.")
	}
	form := url.Values{}
	var raw []byte
	for n := 0; ; n++ {
		part, err := mr.NextPart()
		if err == io.EOF {
			return form, raw, nil
		}
		if err != nil {
			return nil, nil, tooLargeOr(err, apperr.Field("body", "The multipart body is malformed."))
		}
		name, err := partName(part, n)
		if err != nil {
			return nil, nil, err
		}
		limit := int64(maxSmallPart)
		if name == "message" {
			limit = maxSendBody
		}
		data, err := parts.read(part, name, limit)
		if err != nil {
			return nil, nil, err
		}
		if name == "message" {
			raw = data
			continue
		}
		form.Add(name, string(data))
	}
}
