package httpapi

import (
	"fmt"
	"net/http"

	"github.com/postline/postline/internal/account"
)

// handleUpdateDomain changes a domain's own settings: today the second,
// Ed25519 DKIM signature (dkim_ed25519). A field left out keeps its value.
func (s *Server) handleUpdateDomain(w http.ResponseWriter, r *http.Request, p account.Principal) error {
	var in struct {
		DKIMEd25519 *bool `json:"dkim_ed25519"`
	}
	if err := decodeJSON(r, &in); err != nil {
		return err
	}
	if in.DKIMEd25519 == nil {
		return fieldRequired("dkim_ed25519")
	}
	d, err := s.Domains.Owned(r.Context(), p.AccountID, r.PathValue("domain"))
	if err != nil {
		return err
	}
	if d, err = s.Domains.SetDKIMEd25519(r.Context(), d, *in.DKIMEd25519); err != nil {
		return err
	}
	msg := fmt.Sprintf("%s signs with RSA only.", d.Name)
	if d.DKIMEd25519 {
		msg = fmt.Sprintf("%s signs with Ed25519 beside RSA: publish its record (%s._domainkey, purpose dkim_ed25519 in dns_records).",
			d.Name, d.DKIMEd25519Selector())
	}
	writeJSON(w, http.StatusOK, map[string]any{"success": true, "message": msg, "data": s.domainView(d, nil)})
	return nil
}
