package httpapi

import (
	"net/http"
	"strings"

	"github.com/postline/postline/internal/account"
	"github.com/postline/postline/internal/apperr"
)

// checkScope refuses a key used outside its scopes or domains with 403
// naming what is missing, after the route's 404: a domain that is not the
// account's answers as it would for any key, so a limited key learns no
// more than a full one.
func (s *Server) checkScope(r *http.Request, rt route, p account.Principal) error {
	if rt.operator && !p.Full() {
		return apperr.Errorf(apperr.Forbidden, "The operator's routes need a key with every scope and no domain limit")
	}
	name := r.PathValue("domain")
	scopeOK := rt.scope == "" || p.Can(rt.scope)
	domainOK := name == "" || p.DomainAllowed(strings.TrimSuffix(name, "."))
	if scopeOK && domainOK {
		return nil
	}
	if name != "" {
		if _, err := s.Domains.Owned(r.Context(), p.AccountID, name); err != nil {
			if apperr.CodeOf(err) == apperr.NotFound && rt.group == groupDomainLog {
				return apperr.Errorf(apperr.NotFound, msgLogDomainNotFound)
			}
			return err
		}
	}
	if !scopeOK {
		return account.ScopeError(rt.scope)
	}
	return account.DomainError(name)
}
