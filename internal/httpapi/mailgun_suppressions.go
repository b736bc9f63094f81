package httpapi

import (
	"encoding/json"
	"fmt"
	"io"
	"mime"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/postline/postline/internal/account"
	"github.com/postline/postline/internal/apperr"
	"github.com/postline/postline/internal/domain"
	"github.com/postline/postline/internal/suppression"
)

// Mailgun's suppression lists over the domain's: bounces, unsubscribes,
// complaints (unsubscribes whose source is a complaint) and whitelists.

// mgList is one of Mailgun's lists.
type mgList struct {
	typ    suppression.Type
	source string // complaints: unsubscribes from a complaint
	noun   string // in messages
}

var mgLists = map[string]mgList{
	"bounces":      {typ: suppression.Bounce, noun: "bounces"},
	"unsubscribes": {typ: suppression.Unsubscribe, noun: "unsubscribes"},
	"complaints":   {typ: suppression.Unsubscribe, source: "complaint", noun: "complaints"},
	"whitelists":   {typ: suppression.Whitelist, noun: "whitelists"},
}

const mgListMax = 1000 // a page, and a JSON list added at once

// mgListOf resolves {domain} and {list}; an unknown list is a 404 like an
// unknown route.
func (s *Server) mgListOf(r *http.Request, p account.Principal) (domain.Domain, mgList, error) {
	l, ok := mgLists[r.PathValue("list")]
	if !ok {
		return domain.Domain{}, l, apperr.Errorf(apperr.NotFound, "No route for %s %s", r.Method, r.URL.Path)
	}
	d, err := s.mailgunDomain(r, p)
	return d, l, err
}

// mgSuppression is an entry in the list's Mailgun shape.
func mgSuppression(l mgList, e suppression.Entry) map[string]any {
	created := e.CreatedAt.UTC().Format(time.RFC1123Z)
	switch l.typ {
	case suppression.Bounce:
		code, reason := "550", "bounce"
		if e.Source != nil {
			reason = *e.Source
			if c, ok := strings.CutPrefix(*e.Source, "bounce:"); ok && len(c) == 3 {
				code = c
			}
		}
		if e.Description != nil {
			reason = *e.Description
		}
		return map[string]any{"address": e.Recipient, "code": code, "error": reason, "created_at": created}
	case suppression.Whitelist:
		reason := ""
		if e.Description != nil {
			reason = *e.Description
		}
		kind := "address"
		if e.RecipientType == suppression.Domain {
			kind = "domain"
		}
		return map[string]any{"value": e.Recipient, "reason": reason, "type": kind, "createdAt": created}
	}
	tags := []string{"*"}
	if e.Tags != nil && *e.Tags != "" {
		tags = strings.Split(*e.Tags, ",")
	}
	if l.source != "" {
		return map[string]any{"address": e.Recipient, "created_at": created}
	}
	return map[string]any{"address": e.Recipient, "tags": tags, "created_at": created}
}

// handleMailgunList is GET /v3/{domain}/{list}: a page (limit, page) with
// Mailgun's paging object.
func (s *Server) handleMailgunList(w http.ResponseWriter, r *http.Request, p account.Principal) error {
	d, l, err := s.mgListOf(r, p)
	if err != nil {
		return err
	}
	q := r.URL.Query()
	limit, page := 100, 1
	fe := apperr.FieldErrors{}
	if v := q.Get("limit"); v != "" {
		if limit, err = strconv.Atoi(v); err != nil || limit < 1 || limit > mgListMax {
			fe.Add("limit", fmt.Sprintf("The limit must be 1 to %d.", mgListMax))
		}
	}
	if v := q.Get("page"); v != "" {
		if page, err = strconv.Atoi(v); err != nil || page < 1 {
			fe.Add("page", "The page must be a page number from a paging URL.")
		}
	}
	if err := fe.Err(); err != nil {
		return err
	}
	pg, err := s.Suppressions.ListSource(r.Context(), d.ID, l.typ, l.source, page, limit)
	if err != nil {
		return err
	}
	items := make([]map[string]any, len(pg.Entries))
	for i, e := range pg.Entries {
		items[i] = mgSuppression(l, e)
	}
	base := s.publicBase(r) + "/v3/" + d.Name + "/" + r.PathValue("list")
	link := func(n int) string { return fmt.Sprintf("%s?page=%d&limit=%d", base, max(1, n), limit) }
	writeJSON(w, http.StatusOK, map[string]any{"items": items, "total_count": pg.Total, "paging": map[string]string{
		"first": link(1), "last": link(pg.LastPage), "next": link(page + 1), "previous": link(page - 1)}})
	return nil
}

func (s *Server) handleMailgunListGet(w http.ResponseWriter, r *http.Request, p account.Principal) error {
	d, l, err := s.mgListOf(r, p)
	if err != nil {
		return err
	}
	e, err := s.mgFind(r, d.ID, l)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, mgSuppression(l, e))
	return nil
}

func (s *Server) mgFind(r *http.Request, domainID int64, l mgList) (suppression.Entry, error) {
	addr := r.PathValue("address")
	e, err := s.Suppressions.Find(r.Context(), domainID, l.typ, addr)
	if err == nil && l.source != "" && (e.Source == nil || *e.Source != l.source) {
		err = apperr.Errorf(apperr.NotFound, "%s not found", addr)
	}
	if apperr.CodeOf(err) == apperr.NotFound {
		return e, apperr.Errorf(apperr.NotFound, "Address not found in %s table", l.noun)
	}
	return e, err
}

// mgEntryIn is one address to add, as a form or one element of a JSON
// list gives it.
type mgEntryIn struct {
	Address   string `json:"address"`
	Domain    string `json:"domain"`
	Code      any    `json:"code"`
	Error     string `json:"error"`
	Tag       string `json:"tag"`
	Reason    string `json:"reason"`
	CreatedAt string `json:"created_at"`
}

// handleMailgunListAdd is POST /v3/{domain}/{list}: one address (form) or a
// JSON list of up to 1,000.
func (s *Server) handleMailgunListAdd(w http.ResponseWriter, r *http.Request, p account.Principal) error {
	d, l, err := s.mgListOf(r, p)
	if err != nil {
		return err
	}
	in, list, err := readMGEntries(r)
	if err != nil {
		return err
	}
	for i, e := range in {
		params := suppression.AddParams{DomainID: d.ID, Type: l.typ, Recipient: e.Address, Source: "api"}
		switch {
		case l.typ == suppression.Whitelist:
			if e.Domain != "" && e.Address == "" {
				params.Recipient = e.Domain
			}
			params.Description = e.Reason
		case l.typ == suppression.Bounce:
			if e.Code != nil {
				params.Source = "bounce:" + strings.Trim(fmt.Sprint(e.Code), `"`)
			}
			params.Description = e.Error
		case l.source != "":
			params.Source = l.source
		default:
			if e.Tag != "" && e.Tag != "*" {
				params.Tags = e.Tag
			}
		}
		if _, _, err := s.Suppressions.Add(r.Context(), params); err != nil {
			if ae, ok := apperr.As(err); ok && list && ae.Code == apperr.Invalid {
				return apperr.Field(fmt.Sprintf("[%d]", i), mailgunMessage(ae))
			}
			return err
		}
	}
	if !list {
		writeJSON(w, http.StatusOK, map[string]any{"message": "Address has been added to the " + l.noun + " table", "address": in[0].Address})
		return nil
	}
	writeJSON(w, http.StatusOK, map[string]any{"message": fmt.Sprintf("%d addresses have been added to the %s table", len(in), l.noun)})
	return nil
}

// readMGEntries reads a form (one entry) or a JSON array (a list).
func readMGEntries(r *http.Request) ([]mgEntryIn, bool, error) {
	mt, _, _ := mime.ParseMediaType(r.Header.Get("Content-Type"))
	if mt == "application/json" {
		body, err := io.ReadAll(r.Body)
		if err != nil {
			return nil, false, tooLargeOr(err, apperr.Field("body", "The body could not be read."))
		}
		var in []mgEntryIn
		if err := json.Unmarshal(body, &in); err != nil {
			return nil, false, apperr.Field("body", "The body must be a JSON list of objects with an address.")
		}
		if len(in) == 0 || len(in) > mgListMax {
			return nil, false, apperr.Field("body", fmt.Sprintf("The list must have 1 to %d entries.", mgListMax))
		}
		return in, true, nil
	}
	var form url.Values
	if mt == "multipart/form-data" {
		if err := r.ParseMultipartForm(1 << 20); err != nil {
			return nil, false, tooLargeOr(err, apperr.Field("body", "The multipart body is malformed."))
		}
		form = r.MultipartForm.Value
	} else {
		if err := r.ParseForm(); err != nil {
			return nil, false, tooLargeOr(err, apperr.Field("body", "The form body is malformed."))
		}
		form = r.PostForm
	}
	e := mgEntryIn{Address: form.Get("address"), Domain: form.Get("domain"), Error: form.Get("error"), Tag: form.Get("tag"),
		Reason: form.Get("reason"), CreatedAt: form.Get("created_at")}
	if c := form.Get("code"); c != "" {
		e.Code = c
	}
	if e.Address == "" && e.Domain == "" {
		return nil, false, apperr.Field("address", "The address is required.")
	}
	return []mgEntryIn{e}, false, nil
}

func (s *Server) handleMailgunListDelete(w http.ResponseWriter, r *http.Request, p account.Principal) error {
	d, l, err := s.mgListOf(r, p)
	if err != nil {
		return err
	}
	e, err := s.mgFind(r, d.ID, l)
	if err != nil {
		return err
	}
	if err := s.Suppressions.Remove(r.Context(), d.ID, e.ID); err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, map[string]any{"message": "Address has been removed from the " + l.noun + " table", "address": e.Recipient})
	return nil
}

func (s *Server) handleMailgunListClear(w http.ResponseWriter, r *http.Request, p account.Principal) error {
	d, l, err := s.mgListOf(r, p)
	if err != nil {
		return err
	}
	n, err := s.Suppressions.RemoveAll(r.Context(), d.ID, l.typ, l.source)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, map[string]any{"message": fmt.Sprintf("%d addresses have been removed from the %s table", n, l.noun)})
	return nil
}
