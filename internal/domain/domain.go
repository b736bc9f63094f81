// Package domain manages sending domains: ownership, the DKIM key made at
// creation, the DNS records an owner must publish, verification by real DNS
// lookups, delivery settings, and the optional tracking and authentication
// domains.
//
// A domain belongs to exactly one account. Every lookup on behalf of an
// account goes through Owned, which answers NotFound for a domain that
// exists but belongs to someone else, so existence never leaks.
package domain

import (
	"context"
	"time"

	"github.com/postline/postline/internal/apperr"
)

// Delivery modes.
const (
	ModeDirect = "direct" // deliver to the recipients' MX hosts
	ModeSMTP   = "smtp"   // relay through the domain's SMTP credentials
)

// TLS policies for SMTP relays.
const (
	TLSNone     = "none"
	TLSStartTLS = "starttls"
	TLSImplicit = "tls"
)

// Delivery says how a domain's mail leaves the server.
type Delivery struct {
	Mode     string // ModeDirect or ModeSMTP
	Host     string
	Port     int
	User     string
	Password string // plain in memory; sealed at rest
	TLS      string // TLSNone, TLSStartTLS, TLSImplicit
}

// Domain is a sending domain.
type Domain struct {
	ID             int64
	AccountID      int64
	Name           string // lower-case A-label form
	CreatedAt      time.Time
	VerifiedAt     *time.Time
	DKIMSelector   string
	DKIMPrivateKey []byte // PKCS#8 DER; sealed at rest
	DKIMPublicKey  string // base64 SubjectPublicKeyInfo, as published in DNS
	Delivery       Delivery
	TrackingDomain string // empty when none
	AuthDomain     string // empty when none
	Tracking       Tracking
	// Unreadable is set when a sealed secret (the DKIM key, the relay
	// password) could not be decrypted with this process's secret key; it
	// says which. Such a domain is listed and shown, but cannot send or be
	// changed until the operator restores the right key.
	Unreadable string
}

// Tracking says which tracking the domain's messages carry. All are off
// for a new domain: tracking changes the message (rewritten links, an
// image, headers), so the owner turns it on.
type Tracking struct {
	Opens       bool `json:"opens"`       // a 1×1 image at the end of the HTML
	Clicks      bool `json:"clicks"`      // HTML links go through the click URL
	Unsubscribe bool `json:"unsubscribe"` // List-Unsubscribe (RFC 8058 one-click)
}

// CheckReadable returns an apperr.Unavailable error naming what did not
// open when the domain is Unreadable, else nil.
func (d Domain) CheckReadable() error {
	if d.Unreadable == "" {
		return nil
	}
	return apperr.Errorf(apperr.Unavailable, "Domain %s cannot send or be changed: %s. "+
		"The server must run with the secret key its data was sealed with.", d.Name, d.Unreadable)
}

// Verified reports whether the domain passed verification.
func (d Domain) Verified() bool { return d.VerifiedAt != nil }

// Store is the storage the domain service needs. Missing rows are
// apperr.NotFound; a name taken is apperr.Conflict.
type Store interface {
	CreateDomain(ctx context.Context, d Domain) (Domain, error)
	DomainByName(ctx context.Context, name string) (Domain, error)
	DomainByID(ctx context.Context, id int64) (Domain, error)
	ListDomains(ctx context.Context, accountID int64) ([]Domain, error)
	// UpdateDomain writes verification, delivery, tracking and auth fields.
	UpdateDomain(ctx context.Context, d Domain) error
	DeleteDomain(ctx context.Context, id int64) error
}

// Resolver is the DNS the verifier needs.
type Resolver interface {
	LookupTXT(ctx context.Context, name string) ([]string, error)
	LookupCNAME(ctx context.Context, name string) (string, error)
}
