package httpapi

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"time"
	"unicode/utf8"

	"github.com/postline/postline/internal/account"
	"github.com/postline/postline/internal/apperr"
	"github.com/postline/postline/internal/validation"
)

// Input bounds of the validation endpoints. The strict bound is the
// document's; the standard one only keeps absurd inputs out.
const (
	maxStrictEmail   = 254
	maxStandardEmail = 1024
	maxBulkEmails    = 100
)

func (s *Server) handleValidate(w http.ResponseWriter, r *http.Request, p account.Principal) error {
	return s.validateOne(w, r, p, validation.ModeStandard, maxStandardEmail)
}

func (s *Server) handleValidateStrict(w http.ResponseWriter, r *http.Request, p account.Principal) error {
	return s.validateOne(w, r, p, validation.ModeStrict, maxStrictEmail)
}

func (s *Server) validateOne(w http.ResponseWriter, r *http.Request, p account.Principal, mode validation.Mode, maxLen int) error {
	var in struct {
		Email        *json.RawMessage `json:"email"`
		CheckMailbox bool             `json:"check_mailbox"`
	}
	if err := decodeJSON(r, &in); err != nil {
		return err
	}
	email, err := emailField("email", in.Email, maxLen)
	if err != nil {
		return err
	}
	ctx, err := s.mailboxCheck(r, in.CheckMailbox)
	if err != nil {
		return err
	}
	res, err := s.Validator.ValidateAs(ctx, p.AccountID, mode, email)
	if err != nil {
		return err
	}
	s.metrics.validated(res)
	writeJSON(w, http.StatusOK, map[string]any{"success": true, "data": res})
	return nil
}

// emailField checks one address field: present, a non-empty string, within
// maxLen characters.
func emailField(field string, raw *json.RawMessage, maxLen int) (string, error) {
	if raw == nil || string(*raw) == "null" {
		return "", apperr.Field(field, "The "+field+" field is required.")
	}
	var email string
	if err := json.Unmarshal(*raw, &email); err != nil {
		return "", apperr.Field(field, "The "+field+" field must be a string.")
	}
	if email == "" {
		return "", apperr.Field(field, "The "+field+" field is required.")
	}
	if n := utf8.RuneCountInString(email); n > maxLen {
		return "", apperr.Field(field, fmt.Sprintf("The %s field must not be greater than %d characters.", field, maxLen))
	}
	return email, nil
}

func (s *Server) handleValidateBulkStrict(w http.ResponseWriter, r *http.Request, p account.Principal) error {
	var in struct {
		Emails       json.RawMessage `json:"emails"`
		CheckMailbox bool            `json:"check_mailbox"`
	}
	if err := decodeJSON(r, &in); err != nil {
		return err
	}
	emails, err := bulkEmails(in.Emails)
	if err != nil {
		return err
	}
	ctx, err := s.mailboxCheck(r, in.CheckMailbox)
	if err != nil {
		return err
	}
	results, sum, err := s.Validator.ValidateBatchAs(ctx, p.AccountID, validation.ModeStrict, emails)
	if err != nil {
		return err
	}
	for _, res := range results {
		s.metrics.validated(res)
	}
	writeJSON(w, http.StatusOK, map[string]any{"success": true, "data": map[string]any{"results": results, "summary": sum}})
	return nil
}

// bulkEmails accepts both forms the document shows: {"emails": [...]} and
// {"emails": {"emails": [...]}}. Entries must be strings; an entry that is
// not a valid address is validated like any other (and reported invalid).
func bulkEmails(raw json.RawMessage) ([]string, error) {
	raw = bytes.TrimSpace(raw)
	if len(raw) > 0 && raw[0] == '{' {
		var wrapped struct {
			Emails json.RawMessage `json:"emails"`
		}
		if err := json.Unmarshal(raw, &wrapped); err != nil {
			return nil, apperr.Field("emails", "The emails field must be an array of strings.")
		}
		raw = bytes.TrimSpace(wrapped.Emails)
	}
	if len(raw) == 0 || string(raw) == "null" {
		return nil, apperr.Field("emails", "The emails field is required.")
	}
	var items []json.RawMessage
	if err := json.Unmarshal(raw, &items); err != nil {
		return nil, apperr.Field("emails", "The emails field must be an array of strings.")
	}
	fe := apperr.FieldErrors{}
	switch {
	case len(items) == 0:
		fe.Add("emails", "The emails field must have at least 1 item.")
	case len(items) > maxBulkEmails:
		// Nothing more to say: item errors of a huge list would only make a
		// huge answer.
		return nil, apperr.Field("emails", fmt.Sprintf("The emails field must not have more than %d items.", maxBulkEmails))
	}
	emails := make([]string, len(items))
	for i, it := range items {
		if err := json.Unmarshal(it, &emails[i]); err != nil {
			fe.Add(fmt.Sprintf("emails.%d", i), fmt.Sprintf("The emails.%d field must be a string.", i))
		}
	}
	return emails, fe.Err()
}

// mailboxCheck is the request's context, asking for a mailbox probe when
// check_mailbox is true; that is a 422 when the server does not probe.
func (s *Server) mailboxCheck(r *http.Request, want bool) (context.Context, error) {
	if !want {
		return r.Context(), nil
	}
	if !s.Validator.Probing() {
		return nil, apperr.Field("check_mailbox", "Mailbox probing is off on this server (the operator turns it on with --validation-smtp-probe).")
	}
	return validation.WithMailboxCheckUntil(r.Context(), time.Now().Add(s.Limits.ProbeBudget)), nil
}
