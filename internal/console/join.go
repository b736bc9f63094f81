package console

import (
	"cmp"
	"errors"
	"net/http"
	"strings"

	"github.com/postline/postline/internal/account"
	"github.com/postline/postline/internal/apperr"
	"github.com/postline/postline/internal/audit"
)

// joinPage is an invitation's link: a form to set the member's password,
// or a page saying why the link no longer works.
func (c *Console) joinPage(w http.ResponseWriter, r *http.Request) {
	m, err := c.deps.Team.Invitation(r.Context(), r.PathValue("token"))
	if err != nil {
		c.joinRefused(w, r, err)
		return
	}
	c.render(w, r, http.StatusOK, "join", view{Title: "Set your password", Data: map[string]any{"Email": m.Email,
		"Role": string(m.Role), "PasswordRule": account.PasswordRule(), "PasswordMin": account.MinPasswordLen}})
}

// join sets the password, once; the member then signs in with it.
func (c *Console) join(w http.ResponseWriter, r *http.Request) {
	if !sameOrigin(r) {
		http.Error(w, "Forbidden", http.StatusForbidden)
		return
	}
	r.Body = http.MaxBytesReader(w, r.Body, maxSignInBytes)
	if err := r.ParseForm(); err != nil {
		http.Error(w, "The form is at most 64 KiB, URL-encoded.", http.StatusBadRequest)
		return
	}
	token, pw := r.PathValue("token"), r.PostFormValue("password")
	again := func(status int, msg string) {
		m, err := c.deps.Team.Invitation(r.Context(), token)
		if err != nil {
			c.joinRefused(w, r, err)
			return
		}
		c.render(w, r, status, "join", view{Title: "Set your password", Data: map[string]any{"Email": m.Email, "Role": string(m.Role),
			"PasswordRule": account.PasswordRule(), "PasswordMin": account.MinPasswordLen, "Error": msg}})
	}
	if pw != r.PostFormValue("again") {
		again(http.StatusUnprocessableEntity, "The two passwords differ.")
		return
	}
	m, err := c.deps.Team.Join(r.Context(), token, pw)
	var ie *account.InviteError
	switch e, _ := apperr.As(err); {
	case errors.As(err, &ie):
		c.joinRefused(w, r, err)
		return
	case err != nil && e != nil && e.Code == apperr.Invalid:
		again(http.StatusUnprocessableEntity, cmp.Or(strings.Join(e.Fields["password"], " "), e.Message))
		return
	case err != nil && e != nil && e.Code == apperr.RateLimited:
		again(http.StatusTooManyRequests, e.Message)
		return
	case err != nil:
		c.fail(w, r, nil, err)
		return
	}
	if c.deps.Audit != nil {
		c.deps.Audit.Record(r.Context(), audit.Entry{AccountID: m.AccountID, Actor: m.Email, Action: audit.PasswordSet,
			Target: m.Email, Client: clientIP(r)})
	}
	c.render(w, r, http.StatusOK, "signin", view{Title: "Sign in", Data: map[string]any{"Next": "/", "Login": m.Email,
		"Ended": "Your password is set: sign in with your email and it."}})
}

// joinRefused says why a link does not work: used (410), expired (410),
// unknown (404).
func (c *Console) joinRefused(w http.ResponseWriter, r *http.Request, err error) {
	var ie *account.InviteError
	if !errors.As(err, &ie) {
		c.fail(w, r, nil, err)
		return
	}
	status, title, msg := http.StatusGone, "Link already used", "This invitation link has been used: its password is set. Sign in with your email and password."
	switch ie.Why {
	case account.InviteExpired:
		title, msg = "Link expired", "This invitation link has expired (links work for "+durationText(c.deps.Team.InviteTTL())+"): ask an owner of the account for a new one."
	case account.InviteUnknown:
		status, title, msg = http.StatusNotFound, "Unknown link", "This invitation link is not valid (mistyped, or replaced by a newer one): ask an owner of the account for a new one."
	}
	c.render(w, r, status, "notfound", view{Title: title, Data: map[string]any{"Message": msg}})
}
