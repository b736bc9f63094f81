package store

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"strings"
	"time"

	"github.com/postline/postline/internal/apperr"
	"github.com/postline/postline/internal/domain"
	"github.com/postline/postline/internal/secret"
)

// Domains implements domain.Store. DKIM private keys and SMTP passwords
// are sealed with box before they reach the database.
type Domains struct {
	db  *DB
	box *secret.Box
}

var _ domain.Store = Domains{}

// NewDomains returns the domain store.
func NewDomains(db *DB, box *secret.Box) Domains { return Domains{db: db, box: box} }

const domainCols = `id, account_id, name, created_at, verified_at, dkim_selector, dkim_key, dkim_public,
	delivery_mode, smtp_host, smtp_port, smtp_user, smtp_password, smtp_tls, tracking_domain, auth_domain, track_opens, track_clicks, track_unsubscribe,
	claim_expires_at, claim_ended, egress_pool, dns_checked_at, dns_check, inbound, dkim_ed25519, dkim_ed25519_key,
	COALESCE((SELECT a.egress_pool FROM accounts a WHERE a.id = domains.account_id), '')`

// CreateDomain implements domain.Store.
func (s Domains) CreateDomain(ctx context.Context, d domain.Domain) (domain.Domain, error) {
	err := s.db.w.QueryRowContext(ctx, `INSERT INTO domains (account_id, name, created_at, verified_at,
		dkim_selector, dkim_key, dkim_public, delivery_mode, smtp_host, smtp_port, smtp_user, smtp_password,
		smtp_tls, tracking_domain, auth_domain, claim_expires_at, egress_pool, dkim_ed25519, dkim_ed25519_key)
		VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16, $17, $18, $19) RETURNING id`,
		d.AccountID, d.Name, ms(d.CreatedAt), msPtr(d.VerifiedAt), d.DKIMSelector, s.box.Seal(d.DKIMPrivateKey), d.DKIMPublicKey,
		d.Delivery.Mode, d.Delivery.Host, d.Delivery.Port, d.Delivery.User, s.sealPassword(d.Delivery.Password),
		d.Delivery.TLS, d.TrackingDomain, d.AuthDomain, msPtr(d.ClaimExpiresAt), d.Delivery.Pool,
		b2i(d.DKIMEd25519), s.sealBytes(d.DKIMEd25519Key)).Scan(&d.ID)
	if isUnique(err) {
		return d, apperr.Errorf(apperr.Conflict, "domain exists")
	}
	return d, notFound(err, "domain")
}

func msPtr(t *time.Time) any {
	if t == nil {
		return nil
	}
	return ms(*t)
}

func (s Domains) sealPassword(p string) string { return s.sealBytes([]byte(p)) }

// sealBytes seals an optional secret; none is stored as the empty string.
func (s Domains) sealBytes(p []byte) string {
	if len(p) == 0 {
		return ""
	}
	return s.box.Seal(p)
}

func (s Domains) scan(row interface{ Scan(...any) error }) (domain.Domain, error) {
	var d domain.Domain
	var created int64
	var verified, expires sql.NullInt64
	var checked sql.NullInt64
	var key, password, check, edKey string
	err := row.Scan(&d.ID, &d.AccountID, &d.Name, &created, &verified, &d.DKIMSelector, &key, &d.DKIMPublicKey,
		&d.Delivery.Mode, &d.Delivery.Host, &d.Delivery.Port, &d.Delivery.User, &password, &d.Delivery.TLS,
		&d.TrackingDomain, &d.AuthDomain, &d.Tracking.Opens, &d.Tracking.Clicks, &d.Tracking.Unsubscribe,
		&expires, &d.ClaimEnded, &d.Delivery.Pool, &checked, &check, &d.Inbound, &d.DKIMEd25519, &edKey, &d.AccountPool)
	if err != nil {
		return d, err
	}
	d.CreatedAt, d.VerifiedAt, d.ClaimExpiresAt = fromMS(created), nullMS(verified), nullMS(expires)
	d.DNSCheck = readDNSCheck(checked, check)
	// A secret that does not open marks the domain instead of failing the
	// read: one such row must not turn its account's list into an error.
	if d.DKIMPrivateKey, err = s.box.Open(key); err != nil {
		d.Unreadable = "the DKIM key cannot be decrypted with this server's secret key"
	}
	if edKey != "" {
		if d.DKIMEd25519Key, err = s.box.Open(edKey); err != nil {
			d.Unreadable = strings.TrimPrefix(d.Unreadable+"; ", "; ") + "the Ed25519 DKIM key cannot be decrypted with this server's secret key"
		}
	}
	if password != "" {
		if p, err := s.box.Open(password); err != nil {
			d.Unreadable = strings.TrimPrefix(d.Unreadable+"; ", "; ") + "the SMTP relay password cannot be decrypted with this server's secret key"
		} else {
			d.Delivery.Password = string(p)
		}
	}
	return d, nil
}

// DomainsByName implements domain.Store.
func (s Domains) DomainsByName(ctx context.Context, name string) ([]domain.Domain, error) {
	return s.list(ctx, `SELECT `+domainCols+` FROM domains WHERE name = $1 ORDER BY id`, name)
}

// AccountDomain implements domain.Store.
func (s Domains) AccountDomain(ctx context.Context, accountID int64, name string) (domain.Domain, error) {
	d, err := s.scan(s.db.rd.QueryRowContext(ctx, `SELECT `+domainCols+` FROM domains WHERE account_id = $1 AND name = $2`,
		accountID, name))
	return d, notFound(err, "domain")
}

// DomainByID implements domain.Store.
func (s Domains) DomainByID(ctx context.Context, id int64) (domain.Domain, error) {
	d, err := s.scan(s.db.rd.QueryRowContext(ctx, `SELECT `+domainCols+` FROM domains WHERE id = $1`, id))
	return d, notFound(err, "domain")
}

// ListDomains implements domain.Store.
func (s Domains) ListDomains(ctx context.Context, accountID int64) ([]domain.Domain, error) {
	return s.list(ctx, `SELECT `+domainCols+` FROM domains WHERE account_id = $1 ORDER BY name`, accountID)
}

func (s Domains) list(ctx context.Context, query string, args ...any) ([]domain.Domain, error) {
	rows, err := s.db.rd.QueryContext(ctx, query, args...)
	if err != nil {
		return nil, notFound(err, "domains")
	}
	defer rows.Close()
	var out []domain.Domain
	for rows.Next() {
		d, err := s.scan(rows)
		if err != nil {
			return nil, notFound(err, "domains")
		}
		out = append(out, d)
	}
	return out, notFound(rows.Err(), "domains")
}

// UpdateDomain implements domain.Store. A domain whose secrets did not
// open is refused: writing it back would replace them with nothing.
func (s Domains) UpdateDomain(ctx context.Context, d domain.Domain) error {
	if err := d.CheckReadable(); err != nil {
		return err
	}
	return s.update(ctx, s.db.w, d)
}

func (s Domains) update(ctx context.Context, q Querier, d domain.Domain) error {
	err := exec1(ctx, q, "domain", `UPDATE domains SET verified_at = $2, delivery_mode = $3, smtp_host = $4,
		smtp_port = $5, smtp_user = $6, smtp_password = $7, smtp_tls = $8, tracking_domain = $9, auth_domain = $10,
		track_opens = $11, track_clicks = $12, track_unsubscribe = $13, claim_expires_at = $14, claim_ended = $15,
		egress_pool = $16, inbound = $17, dkim_ed25519 = $18, dkim_ed25519_key = $19
		WHERE id = $1`,
		d.ID, msPtr(d.VerifiedAt), d.Delivery.Mode, d.Delivery.Host, d.Delivery.Port, d.Delivery.User,
		s.sealPassword(d.Delivery.Password), d.Delivery.TLS, d.TrackingDomain, d.AuthDomain,
		b2i(d.Tracking.Opens), b2i(d.Tracking.Clicks), b2i(d.Tracking.Unsubscribe), msPtr(d.ClaimExpiresAt), d.ClaimEnded, d.Delivery.Pool, b2i(d.Inbound),
		b2i(d.DKIMEd25519), s.sealBytes(d.DKIMEd25519Key))
	if isUnique(err) {
		return apperr.Errorf(apperr.Conflict, "a name of domain %s is verified by another account", d.Name)
	}
	return err
}

// VerifyDomain implements domain.Store. It writes the verification alone
// (not the rest of d, which may be older than the row): a settings change
// made meanwhile stays, and a claim ended meanwhile is not revived — its
// verification is refused. The unique indexes on verified names and hosts
// decide a race between two accounts verifying at once.
func (s Domains) VerifyDomain(ctx context.Context, d domain.Domain, reason string) error {
	if err := d.CheckReadable(); err != nil { // changes to such a domain answer 503, as before
		return err
	}
	if d.VerifiedAt == nil {
		return exec1(ctx, s.db.w, "domain", `UPDATE domains SET verified_at = NULL WHERE id = $1`, d.ID)
	}
	return s.db.InTx(ctx, func(q Querier) error {
		res, err := q.ExecContext(ctx, `UPDATE domains SET verified_at = $2, claim_expires_at = NULL
			WHERE id = $1 AND claim_ended = ''`, d.ID, ms(*d.VerifiedAt))
		if isUnique(err) {
			return apperr.Errorf(apperr.Conflict, "a name of domain %s is verified by another account", d.Name)
		}
		if err != nil {
			return notFound(err, "domain")
		}
		if n, _ := res.RowsAffected(); n == 0 {
			return apperr.Errorf(apperr.Conflict, "the claim on %s ended while it was being verified: another account verified it first", d.Name)
		}
		_, err = q.ExecContext(ctx, `UPDATE domains SET claim_ended = $3
			WHERE name = $1 AND id <> $2 AND verified_at IS NULL AND claim_ended = ''`, d.Name, d.ID, reason)
		return notFound(err, "domain claims")
	})
}

// HostHolder implements domain.Store.
func (s Domains) HostHolder(ctx context.Context, host string) (int64, error) {
	var account int64
	err := s.db.rd.QueryRowContext(ctx, `SELECT account_id FROM domains WHERE verified_at IS NOT NULL
		AND (name = $1 OR tracking_domain = $1 OR auth_domain = $1) LIMIT 1`, host).Scan(&account)
	if errors.Is(err, sql.ErrNoRows) {
		return 0, nil
	}
	return account, notFound(err, "domain")
}

// DeleteDomain implements domain.Store.
func (s Domains) DeleteDomain(ctx context.Context, id int64) error {
	return s.db.InTx(ctx, func(q Querier) error {
		if err := exec1(ctx, q, "domain", `DELETE FROM domains WHERE id = $1`, id); err != nil {
			return err
		}
		_, err := Meta{db: s.db}.bump(ctx, q, MetaSuppressionsRemoved) // its lists went with it
		return err
	})
}

// DeleteExpiredClaims implements domain.Store.
func (s Domains) DeleteExpiredClaims(ctx context.Context, now time.Time) (int64, error) {
	res, err := s.db.w.ExecContext(ctx, `DELETE FROM domains WHERE verified_at IS NULL AND claim_expires_at <= $1`, ms(now))
	if err != nil {
		return 0, notFound(err, "domains")
	}
	return res.RowsAffected()
}

// dnsCheckJSON is the dns_check column.
type dnsCheckJSON struct {
	OK      bool              `json:"ok"`
	Records map[string]string `json:"records"`
}

func readDNSCheck(at sql.NullInt64, text string) *domain.DNSCheck {
	var j dnsCheckJSON
	if !at.Valid || text == "" || json.Unmarshal([]byte(text), &j) != nil {
		return nil
	}
	return &domain.DNSCheck{At: fromMS(at.Int64), OK: j.OK, Statuses: j.Records}
}

// SaveDNSCheck implements domain.Store.
func (s Domains) SaveDNSCheck(ctx context.Context, id int64, c *domain.DNSCheck) error {
	if c == nil {
		return exec1(ctx, s.db.w, "domain", `UPDATE domains SET dns_checked_at = NULL, dns_check = '' WHERE id = $1`, id)
	}
	b, err := json.Marshal(dnsCheckJSON{OK: c.OK, Records: c.Statuses})
	if err != nil {
		return err
	}
	return exec1(ctx, s.db.w, "domain", `UPDATE domains SET dns_checked_at = $2, dns_check = $3 WHERE id = $1`, id, ms(c.At), string(b))
}

// DueForCheck implements domain.Store (the domains_dns_due index).
func (s Domains) DueForCheck(ctx context.Context, before time.Time, limit int) ([]domain.Domain, error) {
	return s.list(ctx, `SELECT `+domainCols+` FROM domains WHERE verified_at IS NOT NULL
		AND COALESCE(dns_checked_at, verified_at) < $1 ORDER BY COALESCE(dns_checked_at, verified_at) LIMIT $2 + 0`, ms(before), limit)
}

// b2i stores a flag as 0 or 1: the column is INTEGER on both dialects.
func b2i(b bool) int {
	if b {
		return 1
	}
	return 0
}
