package httpapi

import (
	"net/http"
	"strconv"
	"time"

	"github.com/postline/postline/internal/account"
	"github.com/postline/postline/internal/apperr"
)

// keyView is a key as the API shows it; the plain key only at creation.
func keyView(k account.Key) map[string]any {
	m := map[string]any{"id": k.ID, "name": k.Name, "prefix": k.Prefix, "created_at": timeJSON(k.CreatedAt),
		"last_used_at": nil, "revoked_at": nil, "expires_at": nil, "scopes": k.Scopes, "domains": k.Domains}
	if k.Scopes == nil {
		m["scopes"] = account.AllScopes
	}
	if k.Domains == nil {
		m["domains"] = []string{}
	}
	for name, t := range map[string]*time.Time{"last_used_at": k.LastUsedAt, "revoked_at": k.RevokedAt, "expires_at": k.ExpiresAt} {
		if t != nil {
			m[name] = timeJSON(*t)
		}
	}
	return m
}

func (s *Server) handleListKeys(w http.ResponseWriter, r *http.Request, p account.Principal) error {
	return s.writeKeys(w, r, p.Login)
}

// writeKeys answers login's keys, revoked ones included.
func (s *Server) writeKeys(w http.ResponseWriter, r *http.Request, login string) error {
	keys, err := s.Accounts.Keys(r.Context(), login)
	if err != nil {
		return err
	}
	out := make([]map[string]any, len(keys))
	for i, k := range keys {
		out[i] = keyView(k)
	}
	writeJSON(w, http.StatusOK, map[string]any{"success": true, "data": out})
	return nil
}

// keyRequest is the body that creates a key (here and for the operator).
type keyRequest struct {
	Name      string     `json:"name"`
	Scopes    []string   `json:"scopes"`
	Domains   []string   `json:"domains"`
	ExpiresAt *time.Time `json:"expires_at"`
}

// readKeyRequest reads and checks the body that creates a key.
func readKeyRequest(r *http.Request) (account.KeyOptions, error) {
	var in keyRequest
	if err := decodeJSON(r, &in); err != nil {
		return account.KeyOptions{}, err
	}
	o := account.KeyOptions{Name: in.Name, ExpiresAt: in.ExpiresAt}
	var err error
	if in.Scopes != nil {
		if o.Scopes, err = account.CheckScopes(in.Scopes); err != nil {
			return o, err
		}
	}
	if len(in.Domains) > 0 {
		o.Domains, err = account.CheckDomains(in.Domains)
	}
	return o, err
}

// handleCreateKey makes a key for the caller's account. A limited key can
// make keys only as limited as itself (account.Principal.ChildKey), so the
// keys scope is not a way out of a key's other limits.
func (s *Server) handleCreateKey(w http.ResponseWriter, r *http.Request, p account.Principal) error {
	o, err := readKeyRequest(r)
	if err != nil {
		return err
	}
	if o, err = p.ChildKey(o); err != nil {
		return err
	}
	return s.createKey(w, r, p.Login, o)
}

func (s *Server) createKey(w http.ResponseWriter, r *http.Request, login string, o account.KeyOptions) error {
	plain, k, err := s.Accounts.CreateKeyWith(r.Context(), login, o)
	if err != nil {
		return err
	}
	v := keyView(k)
	v["key"] = plain
	writeJSON(w, http.StatusCreated, map[string]any{"success": true, "message": "The key is shown only now.", "data": v})
	return nil
}

// handleRevokeKey revokes one of the caller's keys; another account's key
// is a 404 like a missing one, a broader key than the caller's a 403 (the
// caller's list shows it, so its existence is no secret).
func (s *Server) handleRevokeKey(w http.ResponseWriter, r *http.Request, p account.Principal) error {
	id, err := strconv.ParseInt(r.PathValue("id"), 10, 64)
	if err != nil {
		return apperr.Errorf(apperr.NotFound, "API key not found")
	}
	if err := s.Accounts.RevokeOwnKey(r.Context(), p, id); err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, map[string]any{"success": true, "message": "The key is revoked."})
	return nil
}
