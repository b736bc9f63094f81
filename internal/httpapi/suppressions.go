package httpapi

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"

	"github.com/postline/postline/internal/account"
	"github.com/postline/postline/internal/apperr"
	"github.com/postline/postline/internal/suppression"
)

type suppressionJSON struct {
	ID            int64   `json:"id"`
	Type          string  `json:"type"`
	RecipientType string  `json:"recipient_type"`
	Recipient     string  `json:"recipient"`
	Tags          *string `json:"tags"`
	Description   *string `json:"description"`
	Source        *string `json:"source"`
	CreatedAt     int64   `json:"created_at"` // Unix seconds
}

func suppressionView(e suppression.Entry) suppressionJSON {
	return suppressionJSON{ID: e.ID, Type: string(e.Type), RecipientType: string(e.RecipientType), Recipient: e.Recipient,
		Tags: e.Tags, Description: e.Description, Source: e.Source, CreatedAt: e.CreatedAt.Unix()}
}

func (s *Server) handleSuppressions(w http.ResponseWriter, r *http.Request, p account.Principal) error {
	return s.listSuppressions(w, r, p, true)
}

func (s *Server) handleUnsubscribes(w http.ResponseWriter, r *http.Request, p account.Principal) error {
	return s.listSuppressions(w, r, p, false)
}

func (s *Server) listSuppressions(w http.ResponseWriter, r *http.Request, p account.Principal, typed bool) error {
	q := r.URL.Query()
	fe := apperr.FieldErrors{}
	t := suppression.Unsubscribe
	if typed && q.Has("type") {
		if t = suppression.Type(q.Get("type")); !t.Valid() {
			fe.Add("type", "The selected type is invalid: use unsubscribe, bounce or whitelist.")
		}
	}
	page := intParam(fe, q, "page", 1, 1, 1<<31-1)
	perPage := intParam(fe, q, "per_page", suppression.DefaultPerPage, suppression.MinPerPage, suppression.MaxPerPage)
	search := q.Get("search")
	if len(search) > 254 {
		fe.Add("search", "The search field must not be greater than 254 characters.")
	} else if strings.ContainsRune(search, 0) {
		fe.Add("search", "The search field must not contain NUL characters.")
	}
	if err := fe.Err(); err != nil {
		return err
	}
	d, err := s.Domains.Owned(r.Context(), p.AccountID, r.PathValue("domain"))
	if err != nil {
		return err
	}
	pg, err := s.Suppressions.List(r.Context(), d.ID, t, search, page, perPage)
	if err != nil {
		return err
	}
	data := make([]suppressionJSON, len(pg.Entries))
	for i, e := range pg.Entries {
		data[i] = suppressionView(e)
	}
	var searchOut *string
	if search != "" {
		searchOut = &search
	}
	writeJSON(w, http.StatusOK, map[string]any{
		"success": true,
		"data":    data,
		"pagination": map[string]any{"total": pg.Total, "per_page": pg.PerPage, "current_page": pg.Page,
			"last_page": pg.LastPage, "from": pg.From, "to": pg.To},
		"filters": map[string]any{"type": string(t), "search": searchOut},
	})
	return nil
}

// intParam reads an optional integer query parameter within [lo, hi].
func intParam(fe apperr.FieldErrors, q url.Values, name string, def, lo, hi int) int {
	if !q.Has(name) {
		return def
	}
	v, err := strconv.Atoi(q.Get(name))
	switch {
	case err != nil:
		fe.Add(name, fmt.Sprintf("The %s field must be an integer.", name))
	case v < lo:
		fe.Add(name, fmt.Sprintf("The %s field must be at least %d.", name, lo))
	case v > hi:
		fe.Add(name, fmt.Sprintf("The %s field must not be greater than %d.", name, hi))
	}
	return v
}

func (s *Server) handleWhitelist(w http.ResponseWriter, r *http.Request, p account.Principal) error {
	var in map[string]json.RawMessage
	if err := decodeJSON(r, &in); err != nil {
		return err
	}
	fe := apperr.FieldErrors{}
	recipient := stringField(fe, in, "recipient")
	rt := stringField(fe, in, "recipient_type")
	desc := stringField(fe, in, "description")
	if err := fe.Err(); err != nil {
		return err
	}
	d, err := s.Domains.Owned(r.Context(), p.AccountID, r.PathValue("domain"))
	if err != nil {
		return err
	}
	e, created, err := s.Suppressions.Add(r.Context(), suppression.AddParams{DomainID: d.ID, Type: suppression.Whitelist,
		Recipient: recipient, RecipientType: suppression.RecipientType(rt), Description: desc, Source: "api"})
	if err != nil {
		return err
	}
	status, msg := http.StatusCreated, "Whitelist entry created."
	if !created {
		status, msg = http.StatusOK, "The recipient is already whitelisted."
	}
	writeJSON(w, status, map[string]any{"success": true, "message": msg, "data": suppressionView(e)})
	return nil
}

// stringField reads an optional string member of a JSON object; a member
// of another JSON type is a field error.
func stringField(fe apperr.FieldErrors, in map[string]json.RawMessage, name string) string {
	raw, ok := in[name]
	if !ok || string(raw) == "null" {
		return ""
	}
	var v string
	if err := json.Unmarshal(raw, &v); err != nil {
		fe.Add(name, fmt.Sprintf("The %s field must be a string.", name))
	}
	return v
}

func (s *Server) handleDeleteSuppression(w http.ResponseWriter, r *http.Request, p account.Principal) error {
	return s.deleteByID(w, r, p, "Suppression", s.Suppressions.Remove)
}

// deleteByID answers DELETE .../{id} of something a domain owns: the id
// checked, the domain the caller's, then remove(domainID, id).
func (s *Server) deleteByID(w http.ResponseWriter, r *http.Request, p account.Principal, what string,
	remove func(ctx context.Context, domainID, id int64) error) error {
	id, err := strconv.ParseInt(r.PathValue("id"), 10, 64)
	if err != nil || id < 1 {
		return apperr.Field("id", "The id must be a positive integer.")
	}
	d, err := s.Domains.Owned(r.Context(), p.AccountID, r.PathValue("domain"))
	if err != nil {
		return err
	}
	if err := remove(r.Context(), d.ID, id); err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, map[string]any{"success": true, "message": fmt.Sprintf("%s %d removed.", what, id)})
	return nil
}
