// Package domain manages sending domains: ownership, the DKIM key made at
// creation, the DNS records an owner must publish, verification by real DNS
// lookups, delivery settings, and the optional tracking and authentication
// domains.
//
// A domain row is one account's claim on a name. An unverified claim
// reserves nothing: several accounts may claim the same name, each with its
// own DKIM key (its verification record), and the first to verify owns the
// name; the other claims then end, and unverified claims expire after
// Config.ClaimTTL. A name verified by one account is refused to the others
// with a message that names no account. Every lookup on behalf of an
// account goes through Owned, which finds only that account's claim, so
// another account's domains never show.
package domain

import (
	"context"
	"time"

	"github.com/postline/postline/internal/apperr"
	"github.com/postline/postline/internal/dnsclient"
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
	// Pool is the egress pool (--egress-file) direct deliveries go out
	// through; "" for none.
	Pool string
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
	// DKIMEd25519 says the domain's messages carry a second DKIM
	// signature, Ed25519 (RFC 8463), beside the RSA one (ed25519.go).
	DKIMEd25519 bool
	// DKIMEd25519Key is the Ed25519 key (PKCS#8 DER; sealed at rest),
	// made when the option is first turned on; nil before.
	DKIMEd25519Key []byte
	Delivery       Delivery
	TrackingDomain string // empty when none
	AuthDomain     string // empty when none
	Tracking       Tracking
	// Inbound says the domain takes mail at its own addresses (routes
	// decide what becomes of it); it does so only once verified.
	Inbound bool
	// ClaimExpiresAt is when an unverified claim lapses (nil once verified).
	ClaimExpiresAt *time.Time
	// ClaimEnded says why the claim ended ("" while it stands): another
	// account verified the name first.
	ClaimEnded string
	// AccountPool is the owning account's egress pool, read with the
	// domain (account.Account.Pool): the default when Delivery.Pool is "".
	AccountPool string
	// DNSCheck is the last look-up of the records (nil before any): by
	// "verify now", `postline domain verify` or the daily re-check.
	DNSCheck *DNSCheck
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

// RecordsChanged reports whether the last DNS check of a verified domain
// failed: it stays verified (and sends), but its owner should look.
func (d Domain) RecordsChanged() bool { return d.Verified() && d.DNSCheck != nil && !d.DNSCheck.OK }

// Receives reports whether mail to the domain's addresses is taken: inbound
// is on and the domain is verified. An unverified claim receives nothing,
// since several accounts may claim one name until one verifies it.
func (d Domain) Receives() bool { return d.Inbound && d.Verified() }

// Claim states, as the API shows them.
const (
	ClaimVerified = "verified" // the account owns the name
	ClaimPending  = "pending"  // unverified; expires at ClaimExpiresAt
	ClaimEnded    = "ended"    // another account verified the name first
)

// ClaimStatus is the state of the account's claim on the name.
func (d Domain) ClaimStatus() string {
	switch {
	case d.Verified():
		return ClaimVerified
	case d.ClaimEnded != "":
		return ClaimEnded
	default:
		return ClaimPending
	}
}

// Expired reports whether an unverified claim has lapsed at now.
func (d Domain) Expired(now time.Time) bool {
	return !d.Verified() && d.ClaimExpiresAt != nil && !now.Before(*d.ClaimExpiresAt)
}

// CheckClaim refuses changes to a claim that ended: the name is another
// account's now, and only deleting the claim is left to do.
func (d Domain) CheckClaim() error {
	if d.ClaimStatus() != ClaimEnded {
		return nil
	}
	return apperr.Errorf(apperr.Conflict, "Your claim on %s has ended: %s. Delete the domain from your account.", d.Name, d.ClaimEnded)
}

// Store is the storage the domain service needs. Missing rows are
// apperr.NotFound; a name taken is apperr.Conflict.
type Store interface {
	// CreateDomain stores a claim; Conflict when the account already has
	// one on the name.
	CreateDomain(ctx context.Context, d Domain) (Domain, error)
	// DomainsByName returns every account's claim on name.
	DomainsByName(ctx context.Context, name string) ([]Domain, error)
	// AccountDomain returns accountID's claim on name.
	AccountDomain(ctx context.Context, accountID int64, name string) (Domain, error)
	DomainByID(ctx context.Context, id int64) (Domain, error)
	ListDomains(ctx context.Context, accountID int64) ([]Domain, error)
	// UpdateDomain writes verification, claim, delivery, tracking, auth
	// and inbound fields. Conflict when the domain is verified and its name, tracking
	// or authentication host is another verified domain's.
	UpdateDomain(ctx context.Context, d Domain) error
	// VerifyDomain writes d's verification alone: with d.VerifiedAt set it
	// marks d verified and ends the other accounts' claims on its name with
	// reason, in one transaction (Conflict when another verified domain
	// holds the name or a host, or d's own claim has ended); with it nil,
	// d is unverified. Nothing else of d is written.
	VerifyDomain(ctx context.Context, d Domain, reason string) error
	// HostHolder returns the account of the verified domain whose name,
	// tracking host or authentication host is host (0 when none).
	HostHolder(ctx context.Context, host string) (int64, error)
	DeleteDomain(ctx context.Context, id int64) error
	// DeleteExpiredClaims deletes unverified claims that lapsed before now.
	DeleteExpiredClaims(ctx context.Context, now time.Time) (int64, error)
	// SaveDNSCheck writes a domain's last DNS check alone (nil: none).
	SaveDNSCheck(ctx context.Context, id int64, c *DNSCheck) error
	// DueForCheck returns up to limit verified domains whose last check
	// (or, never checked, verification) was before before, oldest first.
	DueForCheck(ctx context.Context, before time.Time, limit int) ([]Domain, error)
}

// Resolver is the DNS the verifier needs.
type Resolver interface {
	LookupTXT(ctx context.Context, name string) ([]string, error)
	LookupCNAME(ctx context.Context, name string) (string, error)
	LookupMX(ctx context.Context, name string) ([]dnsclient.MX, error)
}

// EgressPool is the egress pool the domain's direct deliveries go out
// through: its own, else its account's; "" for none, and for relay
// delivery (a relay keeps its own connection).
func (d Domain) EgressPool() string {
	if d.Delivery.Mode != ModeDirect {
		return ""
	}
	if d.Delivery.Pool != "" {
		return d.Delivery.Pool
	}
	return d.AccountPool
}
