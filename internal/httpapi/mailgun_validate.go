package httpapi

import (
	"fmt"
	"mime"
	"net/http"
	"net/url"
	"time"
	"unicode/utf8"

	"github.com/postline/postline/internal/account"
	"github.com/postline/postline/internal/apperr"
	"github.com/postline/postline/internal/mailgun"
	"github.com/postline/postline/internal/validation"
)

// maxMailgunAddress is Mailgun's documented bound of address.
const maxMailgunAddress = 512

// handleMailgunValidate is GET|POST /v4/address/validate: Postline's
// standard validation, answered in Mailgun's shape (mailgun.FromResult).
// It counts against the account's hourly validation budget, as
// /api/email/validate does.
func (s *Server) handleMailgunValidate(w http.ResponseWriter, r *http.Request, p account.Principal) error {
	form, err := mailgunParams(r)
	if err != nil {
		return err
	}
	addr := form.Get("address")
	switch {
	case addr == "":
		return apperr.Field("address", "The address parameter is required.")
	case utf8.RuneCountInString(addr) > maxMailgunAddress:
		return apperr.Field("address", fmt.Sprintf("The address must not be longer than %d characters.", maxMailgunAddress))
	}
	probe, err := providerLookup(form)
	if err != nil {
		return err
	}
	ctx := r.Context()
	// Mailgun looks a provider up only when its own analysis is not
	// enough, so a lookup asked for where probing is off is not an error:
	// the answer is then the checks without the mailbox.
	if probe && s.Validator.Probing() {
		ctx = validation.WithMailboxCheckUntil(ctx, time.Now().Add(s.Limits.ProbeBudget))
	}
	res, err := s.Validator.ValidateAs(ctx, p.AccountID, validation.ModeStandard, addr)
	if err != nil {
		return err
	}
	s.metrics.validated(res)
	writeJSON(w, http.StatusOK, mailgun.FromResult(res))
	return nil
}

// mailgunParams are the query's parameters and, for a POST, the form's.
func mailgunParams(r *http.Request) (url.Values, error) {
	if r.Method != http.MethodPost {
		return r.URL.Query(), nil
	}
	mt, _, _ := mime.ParseMediaType(r.Header.Get("Content-Type"))
	var err error
	switch mt {
	case "multipart/form-data":
		err = r.ParseMultipartForm(1 << 20)
	case "application/x-www-form-urlencoded", "":
		err = r.ParseForm()
	default:
		return nil, apperr.Field("body", "The request must be multipart/form-data or application/x-www-form-urlencoded.")
	}
	if err != nil {
		return nil, tooLargeOr(err, apperr.Field("body", "The form body is malformed."))
	}
	return r.Form, nil
}

// providerLookup reads provider_lookup: true or false (default false).
func providerLookup(form url.Values) (bool, error) {
	switch form.Get("provider_lookup") {
	case "", "false", "0":
		return false, nil
	case "true", "1":
		return true, nil
	}
	return false, apperr.Field("provider_lookup", "provider_lookup must be true or false.")
}
