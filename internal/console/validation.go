package console

import (
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/postline/postline/internal/account"
	"github.com/postline/postline/internal/validation"
)

// warningText explains the warning codes of the package doc.
var warningText = map[string]string{
	validation.WarnRoleAccount:  "a role account (info@, sales@ ...): read by several people or none",
	validation.WarnFreeProvider: "a free mailbox provider",
	validation.WarnImplicitMX:   "no MX record: mail goes to the domain's address record (RFC 5321 §5.1)",
}

// validationPage checks one address with the same pipeline as POST
// /api/email/validate (the account's own bounce history included) and
// explains the verdict. It counts against the account's validation
// budget like an API request.
func (c *Console) validationPage(w http.ResponseWriter, r *http.Request, s *account.Session) error {
	return c.renderValidation(w, r, s, http.StatusOK, "")
}

func (c *Console) renderValidation(w http.ResponseWriter, r *http.Request, s *account.Session, status int, uploadErr string) error {
	email := strings.TrimSpace(r.URL.Query().Get("email"))
	data := map[string]any{"Email": email, "UploadError": uploadErr}
	if c.deps.Jobs != nil {
		jobs, err := c.deps.Jobs.List(r.Context(), s.AccountID)
		if err != nil {
			return err
		}
		data["Jobs"] = jobs
	}
	if email != "" {
		if len(email) > 320 {
			data["Problem"] = "An address is at most 320 characters."
		} else if wait := c.validationBudget(r, s); wait != "" {
			data["Problem"] = "The validation limit of your account is reached; try again in " + wait + "."
		} else {
			res, err := c.deps.Validator.ValidateAs(r.Context(), s.AccountID, validation.ModeStandard, email)
			if err != nil {
				return err
			}
			var warnings []string
			for _, code := range res.Warnings {
				text := warningText[code]
				if text == "" {
					text = code
				}
				warnings = append(warnings, code+": "+text)
			}
			data["Result"], data["Warnings"] = res, warnings
		}
	}
	c.render(w, r, status, "validation", view{Title: "Validation", Session: s, Data: data})
	return nil
}

// validationBudget counts one check against the account's hourly
// validation budget, shared with the API; it returns the wait when the
// budget is spent ("" when the check may run, also when the counters
// cannot be read: as in the API).
func (c *Console) validationBudget(r *http.Request, s *account.Session) string {
	return c.budget(r, s, "validation", c.cfg.ValidationPerHour, time.Hour)
}

// budget counts one request against the account's budget of the API's
// rate-limit group name (the same counter as the API's), limit per
// window; it returns the wait when the budget is spent ("" when the
// request may run, also when the counters cannot be read: as in the API).
func (c *Console) budget(r *http.Request, s *account.Session, name string, limit int, window time.Duration) string {
	if c.deps.Limiter == nil || limit <= 0 {
		return ""
	}
	res, err := c.deps.Limiter.Allow(r.Context(), name+":"+strconv.FormatInt(s.AccountID, 10), limit, window)
	if err != nil || res.Allowed {
		return ""
	}
	return (time.Duration(res.RetryAfter(c.deps.Limiter.Now())) * time.Second).String()
}
