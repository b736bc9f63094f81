package httpapi

import (
	"fmt"
	"net/http"
	"time"

	"github.com/postline/postline/internal/account"
	"github.com/postline/postline/internal/domain"
)

// domainJSON is a domain record as the API shows it; secrets never leave.
type domainJSON struct {
	Name           string          `json:"name"`
	Verified       bool            `json:"verified"`
	VerifiedAt     *string         `json:"verified_at"`
	CreatedAt      string          `json:"created_at"`
	Delivery       deliveryJSON    `json:"delivery"`
	TrackingDomain *string         `json:"tracking_domain"`
	AuthDomain     *string         `json:"auth_domain"`
	Tracking       domain.Tracking `json:"tracking"`
	Inbound        inboundJSON     `json:"inbound"`
	DKIMSelector   string          `json:"dkim_selector"`
	// DKIMEd25519 says messages carry an Ed25519 signature (RFC 8463)
	// beside the RSA one; its record is among dns_records.
	DKIMEd25519 bool            `json:"dkim_ed25519"`
	DNSRecords  []domain.Record `json:"dns_records"`
	Claim       claimJSON       `json:"claim"`
	// DNSCheck is the last look-up of the records (null before any);
	// RecordsChanged says it failed for a verified domain, which stays
	// verified.
	DNSCheck       *dnsCheckJSON `json:"dns_check"`
	RecordsChanged bool          `json:"records_changed"`
	// Unreadable says which secret the server could not decrypt (set only
	// then); such a domain cannot send until the operator fixes the key.
	Unreadable string `json:"unreadable,omitempty"`
}

// claimJSON is the state of the account's claim on the name: pending
// until verified (and deleted at expires_at), verified, or ended when
// another account verified the name first.
type claimJSON struct {
	Status    string  `json:"status"`
	ExpiresAt *string `json:"expires_at"`
	Reason    string  `json:"reason,omitempty"`
}

// dnsCheckJSON is a domain's last DNS check: when, and whether every
// required record was in place (each record's state is in dns_records).
type dnsCheckJSON struct {
	CheckedAt string `json:"checked_at"`
	OK        bool   `json:"ok"`
	Outcome   string `json:"outcome"`
}

type deliveryJSON struct {
	Mode        string `json:"mode"`
	Host        string `json:"host,omitempty"`
	Port        int    `json:"port,omitempty"`
	User        string `json:"user,omitempty"`
	Password    string `json:"password,omitempty"` // input only; never rendered
	PasswordSet bool   `json:"password_set"`
	TLS         string `json:"tls,omitempty"`
	Pool        string `json:"pool,omitempty"` // the egress pool; "" for none
}

func timeJSON(t time.Time) string { return t.UTC().Format("2006-01-02T15:04:05.000Z07:00") }

func optional(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}

func (s *Server) domainView(d domain.Domain, recs []domain.Record) domainJSON {
	if recs == nil {
		recs = s.Domains.CheckedRecords(d)
	}
	v := domainJSON{
		Name: d.Name, Verified: d.Verified(), CreatedAt: timeJSON(d.CreatedAt),
		Delivery: deliveryJSON{Mode: d.Delivery.Mode, Host: d.Delivery.Host, Port: d.Delivery.Port,
			User: d.Delivery.User, PasswordSet: d.Delivery.Password != "", TLS: d.Delivery.TLS, Pool: d.Delivery.Pool},
		TrackingDomain: optional(d.TrackingDomain), AuthDomain: optional(d.AuthDomain), Tracking: d.Tracking, Inbound: s.inboundView(d),
		DKIMSelector: d.DKIMSelector, DKIMEd25519: d.DKIMEd25519, DNSRecords: recs, Unreadable: d.Unreadable,
		Claim: claimJSON{Status: d.ClaimStatus(), Reason: d.ClaimEnded}, RecordsChanged: d.RecordsChanged(),
	}
	if c := d.DNSCheck; c != nil {
		v.DNSCheck = &dnsCheckJSON{CheckedAt: timeJSON(c.At), OK: c.OK, Outcome: c.Outcome()}
	}
	if d.ClaimExpiresAt != nil && !d.Verified() {
		t := timeJSON(*d.ClaimExpiresAt)
		v.Claim.ExpiresAt = &t
	}
	if d.VerifiedAt != nil {
		t := timeJSON(*d.VerifiedAt)
		v.VerifiedAt = &t
	}
	return v
}

func (s *Server) handleCreateDomain(w http.ResponseWriter, r *http.Request, p account.Principal) error {
	var in struct {
		Name        string       `json:"name"`
		Delivery    deliveryJSON `json:"delivery"`
		DKIMEd25519 bool         `json:"dkim_ed25519"`
	}
	if err := decodeJSON(r, &in); err != nil {
		return err
	}
	if n, err := domain.NormalizeName(in.Name); err == nil && !p.DomainAllowed(n) {
		return account.DomainError(n)
	}
	d, err := s.Domains.Add(r.Context(), domain.AddParams{AccountID: p.AccountID, Name: in.Name, Delivery: domain.Delivery{
		Mode: in.Delivery.Mode, Host: in.Delivery.Host, Port: in.Delivery.Port, User: in.Delivery.User,
		Password: in.Delivery.Password, TLS: in.Delivery.TLS, Pool: in.Delivery.Pool}, DKIMEd25519: in.DKIMEd25519})
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusCreated, map[string]any{"success": true,
		"message": fmt.Sprintf("Domain %s added. Publish the DNS records, then verify it before %s: until then the name is not reserved.",
			d.Name, d.ClaimExpiresAt.UTC().Format(time.RFC1123)), "data": s.domainView(d, nil)})
	return nil
}

func (s *Server) handleListDomains(w http.ResponseWriter, r *http.Request, p account.Principal) error {
	list, err := s.Domains.List(r.Context(), p.AccountID)
	if err != nil {
		return err
	}
	out := make([]domainJSON, 0, len(list))
	for _, d := range list {
		if p.DomainAllowed(d.Name) {
			out = append(out, s.domainView(d, nil))
		}
	}
	writeJSON(w, http.StatusOK, map[string]any{"success": true, "data": out})
	return nil
}

func (s *Server) handleGetDomain(w http.ResponseWriter, r *http.Request, p account.Principal) error {
	d, err := s.Domains.Owned(r.Context(), p.AccountID, r.PathValue("domain"))
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, map[string]any{"success": true, "data": s.domainView(d, nil)})
	return nil
}

func (s *Server) handleVerifyDomain(w http.ResponseWriter, r *http.Request, p account.Principal) error {
	d, err := s.Domains.Owned(r.Context(), p.AccountID, r.PathValue("domain"))
	if err != nil {
		return err
	}
	d, recs, err := s.Domains.Verify(r.Context(), d, false)
	if err != nil {
		return err
	}
	msg := fmt.Sprintf("Domain %s is verified.", d.Name)
	switch {
	case d.RecordsChanged():
		msg = fmt.Sprintf("Domain %s stays verified, but its DNS records changed since verification: see the status of each DNS record.", d.Name)
	case !d.Verified():
		msg = fmt.Sprintf("Domain %s is not verified: see the status of each DNS record.", d.Name)
	}
	writeJSON(w, http.StatusOK, map[string]any{"success": true, "message": msg, "data": s.domainView(d, recs)})
	return nil
}

func (s *Server) handleDeleteDomain(w http.ResponseWriter, r *http.Request, p account.Principal) error {
	d, err := s.Domains.Owned(r.Context(), p.AccountID, r.PathValue("domain"))
	if err != nil {
		return err
	}
	if err := s.Domains.Remove(r.Context(), d); err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, map[string]any{"success": true, "message": fmt.Sprintf("Domain %s removed.", d.Name)})
	return nil
}

// setHost is the shared body of the PUT and DELETE endpoints for the
// tracking and authentication domains.
func (s *Server) setHost(w http.ResponseWriter, r *http.Request, p account.Principal, what string,
	set func(domain.Domain, string) (domain.Domain, error), current func(domain.Domain) string, host string) error {
	d, err := s.Domains.Owned(r.Context(), p.AccountID, r.PathValue("domain"))
	if err != nil {
		return err
	}
	had := current(d)
	if d, err = set(d, host); err != nil {
		return err
	}
	var msg string
	switch {
	case host != "":
		msg = fmt.Sprintf("The %s of %s is now %s.", what, d.Name, current(d))
	case had != "":
		msg = fmt.Sprintf("The %s %s was removed from %s.", what, had, d.Name)
	default:
		msg = fmt.Sprintf("%s had no %s; nothing to remove.", d.Name, what)
	}
	writeJSON(w, http.StatusOK, map[string]any{"success": true, "message": msg, "data": s.domainView(d, nil)})
	return nil
}

func (s *Server) setTracking(r *http.Request) func(domain.Domain, string) (domain.Domain, error) {
	return func(d domain.Domain, h string) (domain.Domain, error) {
		return s.Domains.SetTracking(r.Context(), d, h)
	}
}

func (s *Server) setAuth(r *http.Request) func(domain.Domain, string) (domain.Domain, error) {
	return func(d domain.Domain, h string) (domain.Domain, error) { return s.Domains.SetAuth(r.Context(), d, h) }
}

func trackingOf(d domain.Domain) string { return d.TrackingDomain }
func authOf(d domain.Domain) string     { return d.AuthDomain }

func (s *Server) handleRemoveTracking(w http.ResponseWriter, r *http.Request, p account.Principal) error {
	return s.setHost(w, r, p, "tracking domain", s.setTracking(r), trackingOf, "")
}

func (s *Server) handleRemoveAuthDomain(w http.ResponseWriter, r *http.Request, p account.Principal) error {
	return s.setHost(w, r, p, "authentication domain", s.setAuth(r), authOf, "")
}

func hostBody(r *http.Request) (string, error) {
	var in struct {
		Host string `json:"host"`
	}
	if err := decodeJSON(r, &in); err != nil {
		return "", err
	}
	if in.Host == "" {
		return "", fieldRequired("host")
	}
	return in.Host, nil
}

func (s *Server) handleSetTracking(w http.ResponseWriter, r *http.Request, p account.Principal) error {
	host, err := hostBody(r)
	if err != nil {
		return err
	}
	return s.setHost(w, r, p, "tracking domain", s.setTracking(r), trackingOf, host)
}

func (s *Server) handleSetAuthDomain(w http.ResponseWriter, r *http.Request, p account.Principal) error {
	host, err := hostBody(r)
	if err != nil {
		return err
	}
	return s.setHost(w, r, p, "authentication domain", s.setAuth(r), authOf, host)
}

// handleSetTrackingOptions turns open, click and unsubscribe tracking on or
// off; a switch left out of the body keeps its value.
func (s *Server) handleSetTrackingOptions(w http.ResponseWriter, r *http.Request, p account.Principal) error {
	var in struct {
		Opens       *bool `json:"opens"`
		Clicks      *bool `json:"clicks"`
		Unsubscribe *bool `json:"unsubscribe"`
	}
	if err := decodeJSON(r, &in); err != nil {
		return err
	}
	d, err := s.Domains.Owned(r.Context(), p.AccountID, r.PathValue("domain"))
	if err == nil {
		d, err = s.Domains.Current(r.Context(), d) // the switches not given are kept as stored
	}
	if err != nil {
		return err
	}
	t := d.Tracking
	for _, sw := range []struct {
		in  *bool
		out *bool
	}{{in.Opens, &t.Opens}, {in.Clicks, &t.Clicks}, {in.Unsubscribe, &t.Unsubscribe}} {
		if sw.in != nil {
			*sw.out = *sw.in
		}
	}
	if d, err = s.Domains.SetTrackingOptions(r.Context(), d, t); err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, map[string]any{"success": true, "message": "Tracking settings updated", "data": s.domainView(d, nil)})
	return nil
}

// handleSetDelivery changes a domain's delivery settings: the fields
// given, the others kept as stored (switching to direct drops the relay's).
func (s *Server) handleSetDelivery(w http.ResponseWriter, r *http.Request, p account.Principal) error {
	var in struct {
		Mode     *string `json:"mode"`
		Host     *string `json:"host"`
		Port     *int    `json:"port"`
		User     *string `json:"user"`
		Password *string `json:"password"`
		TLS      *string `json:"tls"`
		Pool     *string `json:"pool"`
	}
	if err := decodeJSON(r, &in); err != nil {
		return err
	}
	d, err := s.Domains.Owned(r.Context(), p.AccountID, r.PathValue("domain"))
	if err == nil {
		d, err = s.Domains.Current(r.Context(), d)
	}
	if err != nil {
		return err
	}
	del := d.Delivery
	if in.Mode != nil && *in.Mode != del.Mode {
		del = domain.Delivery{Mode: *in.Mode, Pool: del.Pool}
	}
	for _, f := range []struct{ in, out *string }{{in.Host, &del.Host}, {in.User, &del.User},
		{in.Password, &del.Password}, {in.TLS, &del.TLS}, {in.Pool, &del.Pool}} {
		if f.in != nil {
			*f.out = *f.in
		}
	}
	if in.Port != nil {
		del.Port = *in.Port
	}
	if d, err = s.Domains.SetDelivery(r.Context(), d, del, false); err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, map[string]any{"success": true, "message": "Delivery settings updated", "data": s.domainView(d, nil)})
	return nil
}
