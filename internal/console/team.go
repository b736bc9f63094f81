package console

import (
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
	// A link a member sends (or a session of its key) dies with its removal.
	token, m, err := c.deps.Team.InviteBy(r.Context(), s.AccountID, s.ActingMember(), r.PostFormValue("email"), role)
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
