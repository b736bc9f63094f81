package console

import (
	"cmp"
	"errors"
	"net/http"
	"strconv"
	"strings"

	"github.com/postline/postline/internal/account"
	"github.com/postline/postline/internal/apperr"
	"github.com/postline/postline/internal/audit"
)

// ownerOnly shows developers and viewers a 403 page: members, the audit
// log and the account's own password are the owners'.
func (c *Console) ownerOnly(fn pageFunc) pageFunc {
	return func(w http.ResponseWriter, r *http.Request, s *account.Session) error {
		if !s.MayManageTeam() {
			c.render(w, r, http.StatusForbidden, "notfound", view{Title: "Owners only", Session: s,
				Data: map[string]any{"Message": "This page is for the account's owners; your role is " + string(s.RoleOf()) + "."}})
			return nil
		}
		return fn(w, r, s)
	}
}

// readOnlyRefusal answers a viewer's POST: every change is refused.
func (c *Console) readOnlyRefusal(w http.ResponseWriter, r *http.Request, s *account.Session) {
	c.render(w, r, http.StatusForbidden, "notfound", view{Title: "Read only", Session: s,
		Data: map[string]any{"Message": "Your role (viewer) reads this account and changes nothing: ask an owner for the developer role."}})
}

// record writes what s did to the audit log.
func (c *Console) record(r *http.Request, s *account.Session, action, target string) {
	if c.deps.Audit == nil {
		return
	}
	c.deps.Audit.Record(r.Context(), audit.Entry{AccountID: s.AccountID, Actor: s.Actor(""), Action: action,
		Target: target, Client: clientIP(r)})
}

// membersPage lists the account's members; a link just made is shown
// once, on the page the invitation's POST redirects to.
func (c *Console) membersPage(w http.ResponseWriter, r *http.Request, s *account.Session) error {
	return c.renderMembers(w, r, s, http.StatusOK, nil)
}

func (c *Console) renderMembers(w http.ResponseWriter, r *http.Request, s *account.Session, status int, fieldErr map[string][]string) error {
	ms, err := c.deps.Team.Members(r.Context(), s.AccountID)
	if err != nil {
		return err
	}
	c.render(w, r, status, "members", view{Title: "Members", Session: s, Data: map[string]any{"Members": ms,
		"Roles": account.Roles, "Errors": fieldErr, "Now": c.cfg.Now(), "TTL": durationText(c.deps.Team.InviteTTL())}})
	return nil
}

// joinURL is the link a member sets its password at.
func (c *Console) joinURL(r *http.Request, token string) string {
	base := strings.TrimSuffix(c.cfg.PublicURL, "/")
	if base == "" {
		scheme := "http"
		if r.TLS != nil {
			scheme = "https"
		}
		base = scheme + "://" + r.Host
	}
	return base + "/join/" + token
}

func (c *Console) inviteMember(w http.ResponseWriter, r *http.Request, s *account.Session) error {
	role := account.Role(r.PostFormValue("role"))
	token, m, err := c.deps.Team.Invite(r.Context(), s.AccountID, r.PostFormValue("email"), role)
	if e, ok := apperr.As(err); ok && (e.Code == apperr.Invalid || e.Code == apperr.Unprocessable) {
		fields := e.Fields
		if len(fields) == 0 {
			fields = map[string][]string{"email": {e.Message}}
		}
		return c.renderMembers(w, r, s, http.StatusUnprocessableEntity, fields)
	}
	if err != nil {
		return err
	}
	c.record(r, s, audit.MemberInvited, m.Email+" as "+string(m.Role))
	c.redirect(w, r, "/members", flash{Notice: "Invited " + m.Email + " as " + string(m.Role) +
		": send them the link below; it works once, for " + durationText(c.deps.Team.InviteTTL()) + ".", Secret: c.joinURL(r, token)})
	return nil
}

func memberID(r *http.Request) (int64, error) {
	id, err := strconv.ParseInt(r.PathValue("id"), 10, 64)
	if err != nil {
		return 0, apperr.Errorf(apperr.NotFound, "no member")
	}
	return id, nil
}

func (c *Console) setMemberRole(w http.ResponseWriter, r *http.Request, s *account.Session) error {
	id, err := memberID(r)
	if err != nil {
		return err
	}
	m, err := c.deps.Team.SetRole(r.Context(), s.AccountID, id, account.Role(r.PostFormValue("role")))
	if e, ok := apperr.As(err); ok && e.Code == apperr.Invalid {
		return c.renderMembers(w, r, s, http.StatusUnprocessableEntity, e.Fields)
	}
	if err != nil {
		return err
	}
	c.record(r, s, audit.MemberRoleChanged, m.Email+" to "+string(m.Role))
	c.redirect(w, r, "/members", flash{Notice: m.Email + " is now " + string(m.Role) + ", from their next page."})
	return nil
}

func (c *Console) removeMember(w http.ResponseWriter, r *http.Request, s *account.Session) error {
	id, err := memberID(r)
	if err != nil {
		return err
	}
	m, err := c.deps.Team.Remove(r.Context(), s.AccountID, id)
	if err != nil {
		return err
	}
	c.record(r, s, audit.MemberRemoved, m.Email)
	if m.ID == s.MemberID { // removed themselves: signed out
		c.setSessionCookie(w, "")
		http.Redirect(w, r, "/", http.StatusSeeOther)
		return nil
	}
	c.redirect(w, r, "/members", flash{Notice: "Removed " + m.Email + ": their sessions have ended."})
	return nil
}

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
