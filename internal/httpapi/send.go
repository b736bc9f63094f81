package httpapi

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"mime"
	"mime/multipart"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/postline/postline/internal/account"
	"github.com/postline/postline/internal/apperr"
	"github.com/postline/postline/internal/sending"
)

// Size bounds of the send endpoint's parts. Attachments have their own
// limits in sending.Limits; the whole request is bounded by the route.
const (
	maxTextPart      = 5 << 20 // text, html
	maxSmallPart     = 64 << 10
	maxVariablesPart = 1 << 20
	maxSendBody      = 30 << 20 // 25 MiB of attachments plus bodies and multipart framing
	maxIdempotencyID = 255
)

func (s *Server) handleSend(w http.ResponseWriter, r *http.Request, p account.Principal) error {
	key := r.Header.Get("Idempotency-Key")
	if len(key) > maxIdempotencyID || strings.ContainsFunc(key, func(c rune) bool { return c < 0x21 || c > 0x7e }) {
		return apperr.Field("Idempotency-Key", fmt.Sprintf("The Idempotency-Key header must be 1 to %d printable ASCII characters.", maxIdempotencyID))
	}
	d, err := s.Domains.Owned(r.Context(), p.AccountID, r.PathValue("domain"))
	if err != nil {
		return err
	}
	claim := ""
	if key != "" {
		// Claimed before anything is read, so that concurrent requests with
		// the key cannot both send: the second waits for the first's answer.
		var status int
		var body []byte
		claim, status, body, err = s.Sending.Reserve(r.Context(), p.AccountID, d.Name, key)
		if err != nil {
			return err
		}
		if claim == "" && status == 0 {
			return apperr.Errorf(apperr.Conflict, "A request with this Idempotency-Key is still being processed; retry in a moment.")
		}
		if claim == "" {
			w.Header().Set("Idempotent-Replayed", "true")
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(status)
			_, err := w.Write(body)
			return err
		}
	}
	parts := s.parts(r.Context())
	defer parts.close()
	req, err := readSendForm(r, s.Sending.Limits().MaxAttachmentBytes, parts)
	var acc sending.Accepted
	if err == nil {
		req.Senders = s.senderDomains(p)
		acc, err = s.Sending.Accept(r.Context(), d, p.AccountID, req)
	}
	if err != nil {
		if _, partly := sending.Partly(err); partly && key != "" {
			// Part of a batch is queued: a retry with the key must not send
			// it again, so the key keeps this answer.
			e, _ := apperr.As(err)
			body, _ := json.Marshal(map[string]any{"error": e.Message})
			if rerr := s.Sending.Remember(context.WithoutCancel(r.Context()), p.AccountID, d.Name, key, claim, status(e.Code, groupDomainLog), body); rerr != nil {
				s.Logger.Warn("storing idempotency key failed", "error", rerr)
			}
		} else if key != "" { // the request failed: the key may be used again
			if ferr := s.Sending.Forget(context.WithoutCancel(r.Context()), p.AccountID, d.Name, key, claim); ferr != nil {
				s.Logger.Warn("releasing idempotency key failed", "error", ferr)
			}
		}
		return err
	}
	body, err := json.Marshal(map[string]any{"success": true, "message": acc.Message(),
		"data": sendAnswer(acc)})
	if err != nil {
		return err
	}
	if key != "" {
		if err := s.Sending.Remember(context.WithoutCancel(r.Context()), p.AccountID, d.Name, key, claim, http.StatusAccepted, body); err != nil {
			s.Logger.Warn("storing idempotency key failed", "error", err)
		}
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusAccepted)
	_, err = w.Write(body)
	return err
}

// readSendForm streams the multipart body part by part, bounding each, so
// that a large request never sits in memory twice; a part past a mebibyte
// waits in the spool until it has all arrived.
func readSendForm(r *http.Request, maxFile int64, parts *parts) (sending.Request, error) {
	var req sending.Request
	mt, _, _ := mime.ParseMediaType(r.Header.Get("Content-Type"))
	switch mt {
	case "application/x-www-form-urlencoded":
		return readSendURLEncoded(r, parts)
	case "multipart/form-data":
	default:
		return req, apperr.Field("body", "The request must be multipart/form-data or application/x-www-form-urlencoded (fields without files).")
	}
	mr, err := r.MultipartReader()
	if err != nil {
		return req, apperr.Field("body", "The multipart body is malformed.")
	}
	for n := 0; ; n++ {
		part, err := mr.NextPart()
		if errors.Is(err, io.EOF) {
			return req, nil
		}
		if err != nil {
			return req, tooLargeOr(err, apperr.Field("body", "The multipart body is malformed."))
		}
		if err := readPart(&req, part, n, maxFile, parts); err != nil {
			return req, err
		}
	}
}

// sendFields are the text parts the endpoint knows; any other name is
// refused rather than ignored, so a misspelt field is never silently lost.
var sendFields = map[string]bool{"from": true, "from_name": true, "to": true, "cc": true, "bcc": true, "subject": true, "text": true,
	"html": true, "headers": true, "reply_to": true, "tags": true, "attachment_options": true,
	"template": true, "template_version": true, "variables": true, "recipient_variables": true, "deliver_at": true}

// partName returns the part's form field name. A part whose
// Content-Disposition does not parse is refused: ignoring it would drop an
// attachment the sender believes went out.
func partName(part *multipart.Part, n int) (string, error) {
	disp, params, err := mime.ParseMediaType(part.Header.Get("Content-Disposition"))
	if err != nil || disp != "form-data" || params["name"] == "" {
		field := fmt.Sprintf("body.parts.%d", n)
		return "", apperr.Field(field, fmt.Sprintf("Part %d of the multipart body has no valid Content-Disposition "+
			`(want form-data; name="..."; a file part also filename="..."), so it cannot be read.`, n+1))
	}
	return part.FormName(), nil
}

func readPart(req *sending.Request, part *multipart.Part, n int, maxFile int64, parts *parts) error {
	formName, err := partName(part, n)
	if err != nil {
		return err
	}
	name := fieldName(formName)
	if part.FileName() != "" || name == "attachments" {
		if name != "attachments" {
			return apperr.Field(name, "Files are accepted only in the attachments part.")
		}
		i := len(req.Attachments)
		data, err := parts.read(part, fmt.Sprintf("attachments.%d", i), maxFile)
		if err != nil {
			return err
		}
		req.Attachments = append(req.Attachments, sending.Attachment{Filename: part.FileName(), ContentType: fileType(part, data), Data: data})
		return nil
	}
	if err := checkSendField(name); err != nil {
		return err
	}
	data, err := parts.read(part, name, fieldLimit(name))
	if err != nil {
		return err
	}
	setSendField(req, name, string(data))
	return nil
}

// fieldName is a form field's name without a trailing "[]". A name the
// endpoint does not know is only ever echoed in an error: it is kept short
// and clean.
func fieldName(formName string) string {
	name := strings.TrimSuffix(formName, "[]")
	if len(name) > 64 || !utf8.ValidString(name) || strings.ContainsFunc(name, unicode.IsControl) {
		name = strings.Map(func(r rune) rune {
			if unicode.IsControl(r) {
				return -1
			}
			return r
		}, strings.ToValidUTF8(name[:min(len(name), 64)], "")) + "…"
	}
	return name
}

// readSendURLEncoded reads a urlencoded send: the same fields as the
// multipart form, each within its limit, and no files. The body waits in
// the spool as a multipart one does.
func readSendURLEncoded(r *http.Request, parts *parts) (sending.Request, error) {
	var req sending.Request
	body, err := parts.read(r.Body, "body", maxSendBody)
	if err != nil {
		return req, err
	}
	form, err := url.ParseQuery(string(body))
	if err != nil {
		return req, apperr.Field("body", "The form body is malformed.")
	}
	names := slices.Sorted(maps.Keys(form)) // errors name the same field every time
	for _, formName := range names {
		name := fieldName(formName)
		if name == "attachments" {
			return req, apperr.Field(name, "Files need a multipart/form-data request: an application/x-www-form-urlencoded one carries fields only.")
		}
		if err := checkSendField(name); err != nil {
			return req, err
		}
		for _, v := range form[formName] {
			if limit := fieldLimit(name); int64(len(v)) > limit {
				return req, apperr.Field(name, fmt.Sprintf("The %s part must not be larger than %d bytes.", name, limit))
			}
			setSendField(&req, name, v)
		}
	}
	return req, nil
}

// checkSendField refuses a field the endpoint does not know, rather than
// ignoring it: a misspelt field is never silently lost.
func checkSendField(name string) error {
	if !sendFields[name] {
		return apperr.Field(name, fmt.Sprintf("Unknown field %q: the fields are from, from_name, to, cc, bcc, subject, text, html, "+
			"headers, reply_to, tags, attachment_options, template, template_version, variables, recipient_variables, deliver_at and attachments.", name))
	}
	return nil
}

// setSendField sets one text field of a send (to, cc and bcc add up).
func setSendField(req *sending.Request, name, v string) {
	switch name {
	case "from":
		req.From = v
	case "from_name":
		req.FromName = v
	case "to":
		req.To = append(req.To, v)
	case "cc":
		req.Cc = append(req.Cc, v)
	case "bcc":
		req.Bcc = append(req.Bcc, v)
	case "subject":
		req.Subject = v
	case "text":
		req.Text = v
	case "html":
		req.HTML = v
	case "headers":
		req.Headers = v
	case "reply_to":
		req.ReplyTo = v
	case "tags":
		req.Tags = v
	case "attachment_options":
		req.Options = v
	case "template":
		req.Template = v
	case "template_version":
		req.TemplateVersion = v
	case "variables":
		req.Variables = v
	case "recipient_variables":
		req.RecipientVariables = v
	case "deliver_at":
		req.DeliverAt = v
	}
}

func sendAnswer(acc sending.Accepted) map[string]any {
	m := map[string]any{"message_ids": acc.MessageIDs, "queued": acc.Queued, "suppressed": acc.Suppressed}
	if !acc.DeliverAt.IsZero() {
		m["deliver_at"] = timeJSON(acc.DeliverAt)
	}
	return m
}

// fieldLimit is the largest text part a send takes under name (the send
// endpoint's names and their Mailgun spellings).
func fieldLimit(name string) int64 {
	switch name {
	case "text", "html", "recipient_variables", "recipient-variables":
		return maxTextPart
	case "variables", "t:variables":
		return maxVariablesPart
	}
	return maxSmallPart
}

// fileType is a file part's declared type, or the sniffed one when it
// declares none (or the generic octet-stream).
func fileType(part *multipart.Part, data []byte) string {
	ct := part.Header.Get("Content-Type")
	if ct == "" || ct == "application/octet-stream" {
		ct = http.DetectContentType(data)
	}
	return ct
}
