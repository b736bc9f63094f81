package domain

import (
	"context"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"encoding/base64"
	"fmt"
	"log/slog"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/postline/postline/internal/apperr"
	"golang.org/x/net/idna"
)

// Config configures the Service.
type Config struct {
	// RelayAllowlist lists SMTP relay hosts (exact, or "*.suffix") a tenant
	// may configure over the API; operators using the CLI are not limited.
	RelayAllowlist []string
	SPFRecord      string // TXT value to publish at the domain
	PublicHost     string // target of tracking and return-path CNAMEs
	// InboundMXHost is the host an inbound domain's MX record names (the
	// inbound SMTP listener's public name); "" when the operator set none.
	InboundMXHost string
	// ServiceHosts are other names the service answers on (the listen
	// address's host); no tenant may claim them.
	ServiceHosts []string
	DKIMKeyBits  int // default 2048
	// ClaimTTL is how long an unverified claim lasts (default 72 h).
	ClaimTTL time.Duration
	// OwnedCacheTTL is how long an account's domain, once read, is served
	// from memory (cache.go); 0 reads it every time.
	OwnedCacheTTL time.Duration
	Now           func() time.Time
	// HasPool reports whether the egress file defines a pool; nil: none
	// is defined, and only "" may be set.
	HasPool func(name string) bool
	// Logger hears of failed DNS checks; Metrics counts every check (nil:
	// not counted).
	Logger  *slog.Logger
	Metrics *Metrics
}

// Service is the domain capability.
type Service struct {
	store    Store
	resolver Resolver
	cfg      Config
}

// NewService returns a Service. resolver may be nil when verification is
// never used (some CLI commands).
func NewService(store Store, resolver Resolver, cfg Config) *Service {
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.DKIMKeyBits == 0 {
		cfg.DKIMKeyBits = 2048
	}
	if cfg.ClaimTTL <= 0 {
		cfg.ClaimTTL = 72 * time.Hour
	}
	if cfg.SPFRecord == "" {
		cfg.SPFRecord = "v=spf1 a mx ~all"
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	if cfg.OwnedCacheTTL > 0 {
		store = cachingStore{Store: store, c: newOwnedCache(cfg.OwnedCacheTTL)}
	}
	return &Service{store: store, resolver: resolver, cfg: cfg}
}

// Current is d as stored now. A change starts from it, not from the copy
// the caller holds: with the owned cache on, that copy may be up to its
// lifetime old, and writing it back whole would undo what another process
// changed meanwhile (a verification, a claim ended by another account).
// Callers that merge a change into a domain (some switches set, the rest
// kept) take Current first, so that what they keep is what is stored.
func (s *Service) Current(ctx context.Context, d Domain) (Domain, error) {
	if _, cached := s.store.(cachingStore); !cached {
		return d, nil
	}
	cur, err := s.store.DomainByID(ctx, d.ID)
	if apperr.CodeOf(err) == apperr.NotFound || (err == nil && cur.AccountID != d.AccountID) {
		return d, apperr.Errorf(apperr.NotFound, NotOwnedMessage)
	}
	return cur, err
}

// AddParams describes a new domain.
type AddParams struct {
	AccountID int64
	Name      string
	Delivery  Delivery
	// Trusted skips the relay allowlist (the operator's CLI).
	Trusted bool
	// DKIMEd25519 adds an Ed25519 key and signature beside the RSA one.
	DKIMEd25519 bool
}

// Add creates the account's claim on a domain, with a fresh DKIM key. It
// reserves nothing until verified; a name another account has verified is
// refused, and an account's own ended claim is replaced.
func (s *Service) Add(ctx context.Context, p AddParams) (Domain, error) {
	fe := apperr.FieldErrors{}
	name, err := NormalizeName(p.Name)
	if err != nil {
		fe.Add("name", err.Error())
	}
	s.checkDelivery(fe, &p.Delivery, p.Trusted)
	if err := fe.Err(); err != nil {
		return Domain{}, err
	}
	if err := s.checkHost(ctx, p.AccountID, name, "domain"); err != nil {
		return Domain{}, err
	}
	if own, err := s.store.AccountDomain(ctx, p.AccountID, name); err == nil {
		if own.ClaimStatus() != ClaimEnded && !own.Expired(s.cfg.Now()) {
			return Domain{}, apperr.Errorf(apperr.Conflict, "domain %s is already in your account", name)
		}
		if err := s.store.DeleteDomain(ctx, own.ID); err != nil {
			return Domain{}, err
		}
	} else if apperr.CodeOf(err) != apperr.NotFound {
		return Domain{}, err
	}
	key, err := rsa.GenerateKey(rand.Reader, s.cfg.DKIMKeyBits)
	if err != nil {
		return Domain{}, err
	}
	priv, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		return Domain{}, err
	}
	pub, err := x509.MarshalPKIXPublicKey(&key.PublicKey)
	if err != nil {
		return Domain{}, err
	}
	now := s.cfg.Now().UTC()
	expires := now.Add(s.cfg.ClaimTTL)
	d := Domain{
		ClaimExpiresAt: &expires,
		AccountID:      p.AccountID,
		Name:           name,
		CreatedAt:      now,
		DKIMSelector:   "pl" + now.Format("200601"),
		DKIMPrivateKey: priv,
		DKIMPublicKey:  base64.StdEncoding.EncodeToString(pub),
		Delivery:       p.Delivery,
		DKIMEd25519:    p.DKIMEd25519,
	}
	if p.DKIMEd25519 {
		if err := ensureEd25519Key(&d); err != nil {
			return Domain{}, err
		}
	}
	d, err = s.store.CreateDomain(ctx, d)
	if apperr.CodeOf(err) == apperr.Conflict {
		return Domain{}, apperr.Errorf(apperr.Conflict, "domain %s is already in your account", name)
	}
	return d, err
}

// checkHost refuses host (a domain name, tracking or authentication host)
// when a verified domain of another account holds it. The message names
// no account.
func (s *Service) checkHost(ctx context.Context, accountID int64, host, what string) error {
	holder, err := s.store.HostHolder(ctx, host)
	if err != nil {
		return err
	}
	if holder != 0 && holder != accountID {
		return apperr.Errorf(apperr.Conflict, "%s %s is verified by another account", what, host)
	}
	return nil
}

// ByID returns a domain by id (the delivery workers' lookup).
func (s *Service) ByID(ctx context.Context, id int64) (Domain, error) {
	return s.store.DomainByID(ctx, id)
}

// NotOwnedMessage is the one answer for a domain that is missing or not
// the caller's, so the two cannot be told apart.
const NotOwnedMessage = "Domain not found or not owned by user"

// Owned returns accountID's claim on name, else NotFound (the same answer
// as for a domain that does not exist, or another account's). An expired
// claim is gone.
func (s *Service) Owned(ctx context.Context, accountID int64, name string) (Domain, error) {
	n, err := NormalizeName(name)
	if err != nil {
		return Domain{}, apperr.Errorf(apperr.NotFound, NotOwnedMessage)
	}
	d, err := s.store.AccountDomain(ctx, accountID, n)
	if apperr.CodeOf(err) == apperr.NotFound || (err == nil && d.Expired(s.cfg.Now())) {
		return Domain{}, apperr.Errorf(apperr.NotFound, NotOwnedMessage)
	}
	return d, err
}

// ForOperator finds a domain for the operator's CLI: login's claim when
// login is given, else the one standing claim on the name (verified or
// pending). When several accounts claim it, the error lists their logins,
// which the operator may see.
func (s *Service) ForOperator(ctx context.Context, name, login string, loginOf func(ctx context.Context, accountID int64) (string, error)) (Domain, error) {
	n, err := NormalizeName(name)
	if err != nil {
		return Domain{}, apperr.Errorf(apperr.NotFound, "domain %s not found", name)
	}
	all, err := s.store.DomainsByName(ctx, n)
	if err != nil {
		return Domain{}, err
	}
	var standing []Domain
	var logins []string
	for _, d := range all {
		l := fmt.Sprintf("account %d", d.AccountID)
		if loginOf != nil {
			if l, err = loginOf(ctx, d.AccountID); err != nil {
				return Domain{}, err
			}
		}
		if login != "" {
			if strings.EqualFold(l, login) {
				return d, nil
			}
			continue
		}
		if d.ClaimStatus() != ClaimEnded && !d.Expired(s.cfg.Now()) {
			standing = append(standing, d)
			logins = append(logins, l)
		}
	}
	switch {
	case login != "":
		return Domain{}, apperr.Errorf(apperr.NotFound, "account %s has no domain %s", login, n)
	case len(standing) == 1:
		return standing[0], nil
	case len(standing) == 0 && len(all) > 0:
		return Domain{}, apperr.Errorf(apperr.NotFound, "domain %s has only ended or expired claims; name the account with --account", n)
	case len(standing) == 0:
		return Domain{}, apperr.Errorf(apperr.NotFound, "domain %s not found", name)
	}
	return Domain{}, apperr.Errorf(apperr.Conflict, "domain %s is claimed by several accounts (%s): name one with --account LOGIN",
		n, strings.Join(logins, ", "))
}

// Get is ForOperator without a login: the one standing claim on name.
func (s *Service) Get(ctx context.Context, name string) (Domain, error) {
	return s.ForOperator(ctx, name, "", nil)
}

// List returns an account's domains, by name, without expired claims.
func (s *Service) List(ctx context.Context, accountID int64) ([]Domain, error) {
	all, err := s.store.ListDomains(ctx, accountID)
	now := s.cfg.Now()
	out := all[:0]
	for _, d := range all {
		if !d.Expired(now) {
			out = append(out, d)
		}
	}
	return out, err
}

// DeleteExpiredClaims removes unverified claims past their time, with
// what was stored under them (serve runs it periodically).
func (s *Service) DeleteExpiredClaims(ctx context.Context) (int64, error) {
	return s.store.DeleteExpiredClaims(ctx, s.cfg.Now())
}

// Remove deletes a domain.
func (s *Service) Remove(ctx context.Context, d Domain) error { return s.store.DeleteDomain(ctx, d.ID) }

// SetTracking sets (host non-empty) or removes (host empty) the tracking
// domain. Removing is idempotent.
func (s *Service) SetTracking(ctx context.Context, d Domain, host string) (Domain, error) {
	d, err := s.Current(ctx, d)
	if err != nil {
		return d, err
	}
	h, err := s.subdomainOrEmpty("host", d, host)
	if err != nil {
		return d, err
	}
	if err := s.checkNewHost(ctx, d, h, "tracking host"); err != nil {
		return d, err
	}
	d.TrackingDomain = h
	return d, s.store.UpdateDomain(ctx, d)
}

// SetAuth sets or removes the authentication (return-path and DKIM d=)
// domain. Removing is idempotent.
func (s *Service) SetAuth(ctx context.Context, d Domain, host string) (Domain, error) {
	d, err := s.Current(ctx, d)
	if err != nil {
		return d, err
	}
	h, err := s.subdomainOrEmpty("host", d, host)
	if err != nil {
		return d, err
	}
	if err := s.checkNewHost(ctx, d, h, "authentication host"); err != nil {
		return d, err
	}
	d.AuthDomain = h
	return d, s.store.UpdateDomain(ctx, d)
}

// checkNewHost refuses changes to an ended claim and a host another
// account has verified.
func (s *Service) checkNewHost(ctx context.Context, d Domain, host, what string) error {
	if host == "" {
		return nil // removing is always allowed
	}
	if err := d.CheckClaim(); err != nil {
		return err
	}
	return s.checkHost(ctx, d.AccountID, host, what)
}

// subdomainOrEmpty checks a tracking or authentication host: a name
// strictly below the domain (so a tenant can only claim names it controls,
// and never the service's own host, whose API would then answer only
// tracking paths), or empty to remove it.
func (s *Service) subdomainOrEmpty(field string, d Domain, host string) (string, error) {
	if host == "" {
		return "", nil
	}
	h, err := NormalizeName(host)
	if err != nil {
		return "", apperr.Field(field, err.Error())
	}
	if !strings.HasSuffix(h, "."+d.Name) {
		return "", apperr.Field(field, fmt.Sprintf("must be a subdomain of %s, e.g. track.%s", d.Name, d.Name))
	}
	for _, own := range append([]string{s.cfg.PublicHost}, s.cfg.ServiceHosts...) {
		if a, err := NormalizeName(own); err == nil && a == h { // A-label form, as h is
			return "", apperr.Field(field, "must not be the service's own host name")
		}
	}
	return h, nil
}

// SetInbound turns receiving mail at the domain's addresses on or off.
// Turning it on is refused for an ended claim; an unverified domain may
// have it on and receives once verified (Domain.Receives).
func (s *Service) SetInbound(ctx context.Context, d Domain, on bool) (Domain, error) {
	d, err := s.Current(ctx, d)
	if err != nil {
		return d, err
	}
	if on {
		if err := d.CheckClaim(); err != nil {
			return d, err
		}
	}
	d.Inbound = on
	return d, s.store.UpdateDomain(ctx, d)
}

// InboundMXHost is the host the MX record of an inbound domain names; ""
// when none is configured.
func (s *Service) InboundMXHost() string { return s.cfg.InboundMXHost }

// Receiving returns the domain that takes mail for name: the verified
// claim on it, with inbound on; NotFound otherwise (no such domain, not
// verified, inbound off), never told apart.
func (s *Service) Receiving(ctx context.Context, name string) (Domain, error) {
	n, err := NormalizeName(name)
	if err != nil {
		return Domain{}, apperr.Errorf(apperr.NotFound, "no inbound domain %s", name)
	}
	all, err := s.store.DomainsByName(ctx, n)
	if err != nil {
		return Domain{}, err
	}
	for _, d := range all {
		if d.Receives() {
			return d, nil
		}
	}
	return Domain{}, apperr.Errorf(apperr.NotFound, "no inbound domain %s", n)
}

// SetTrackingOptions replaces the tracking switches.
func (s *Service) SetTrackingOptions(ctx context.Context, d Domain, t Tracking) (Domain, error) {
	d, err := s.Current(ctx, d)
	if err != nil {
		return d, err
	}
	if err := d.CheckClaim(); err != nil {
		return d, err
	}
	d.Tracking = t
	return d, s.store.UpdateDomain(ctx, d)
}

// SetDelivery replaces the delivery settings.
func (s *Service) SetDelivery(ctx context.Context, d Domain, del Delivery, trusted bool) (Domain, error) {
	d, err := s.Current(ctx, d)
	if err != nil {
		return d, err
	}
	if err := d.CheckClaim(); err != nil {
		return d, err
	}
	fe := apperr.FieldErrors{}
	s.checkDelivery(fe, &del, trusted)
	if err := fe.Err(); err != nil {
		return d, err
	}
	d.Delivery = del
	return d, s.store.UpdateDomain(ctx, d)
}

func (s *Service) checkDelivery(fe apperr.FieldErrors, del *Delivery, trusted bool) {
	del.Pool = strings.TrimSpace(del.Pool)
	if del.Pool != "" && (s.cfg.HasPool == nil || !s.cfg.HasPool(del.Pool)) {
		fe.Add("delivery.pool", fmt.Sprintf("no egress pool named %.64q in the egress file", del.Pool))
	}
	switch del.Mode {
	case ModeDirect:
		if del.Host != "" || del.User != "" || del.Password != "" {
			fe.Add("delivery.mode", "direct delivery takes no SMTP host or credentials")
		}
		del.Port, del.TLS = 0, ""
		return
	case ModeSMTP:
		if del.Pool != "" {
			fe.Add("delivery.pool", "egress pools apply to direct delivery only")
		}
	default:
		fe.Add("delivery.mode", "must be direct or smtp")
		return
	}
	host := strings.ToLower(strings.TrimSpace(del.Host))
	if host == "" || len(host) > 253 || strings.ContainsFunc(host, func(r rune) bool { return r <= ' ' || r == 0x7f }) ||
		strings.ContainsAny(host, "/:@") {
		fe.Add("delivery.host", "must be a host name or IP address")
	} else if !trusted && !allowed(host, s.cfg.RelayAllowlist) {
		fe.Add("delivery.host", fmt.Sprintf("relay host %s is not on the operator's allowlist", host))
	}
	del.Host = host
	if del.Port == 0 {
		del.Port = 587
	}
	if del.Port < 1 || del.Port > 65535 {
		fe.Add("delivery.port", "must be 1 to 65535")
	}
	switch del.TLS {
	case "":
		del.TLS = TLSStartTLS
	case TLSNone, TLSStartTLS, TLSImplicit:
	default:
		fe.Add("delivery.tls", "must be none, starttls or tls")
	}
	if len(del.User) > 255 || len(del.Password) > 255 {
		fe.Add("delivery.user", "user and password must be at most 255 characters")
	}
	for field, v := range map[string]string{"delivery.user": del.User, "delivery.password": del.Password} {
		if strings.ContainsRune(v, 0) || !utf8.ValidString(v) {
			fe.Add(field, "must be valid UTF-8 without NUL characters")
		}
	}
	if (del.User == "") != (del.Password == "") {
		fe.Add("delivery.password", "user and password go together")
	}
}

func allowed(host string, list []string) bool {
	for _, p := range list {
		p = strings.ToLower(p)
		if suffix, ok := strings.CutPrefix(p, "*."); ok {
			if strings.HasSuffix(host, "."+suffix) {
				return true
			}
		} else if host == p {
			return true
		}
	}
	return false
}

// NormalizeName turns a domain name into its lower-case A-label form and
// checks it is a plausible public host name (at least two labels).
func NormalizeName(name string) (string, error) {
	n := strings.TrimSuffix(strings.TrimSpace(name), ".")
	if n == "" {
		return "", fmt.Errorf("domain name is required")
	}
	a, err := idna.Lookup.ToASCII(n)
	if err != nil || len(a) > 253 || !strings.Contains(a, ".") {
		return "", fmt.Errorf("%q is not a valid domain name", name)
	}
	labels := strings.Split(a, ".")
	for _, l := range labels {
		if l == "" || len(l) > 63 || l[0] == '-' || l[len(l)-1] == '-' {
			return "", fmt.Errorf("%q is not a valid domain name", name)
		}
	}
	// No top-level domain is all digits (RFC 3696 §2): such a name is an
	// IP address, or would be read as one.
	if strings.Trim(labels[len(labels)-1], "0123456789") == "" {
		return "", fmt.Errorf("%q is not a valid domain name (an IP address?)", name)
	}
	return strings.ToLower(a), nil
}
