package account_test

import (
	"testing"
	"time"

	"github.com/postline/postline/internal/account"
	"github.com/postline/postline/internal/apperr"
)

// TestChildKeyAndMayRevoke: a key's children and the keys it may revoke
// are at most as broad as itself in scopes, domains and lifetime.
func TestChildKeyAndMayRevoke(t *testing.T) {
	t.Parallel()
	hour := time.Date(2026, 11, 26, 12, 0, 0, 0, time.UTC)
	sooner, later := hour.Add(-30*time.Minute), hour.Add(time.Hour)
	limited := account.Principal{Scopes: []string{"send", "keys"}, Domains: []string{"shop.example"}, ExpiresAt: &hour}
	full := account.Principal{}
	one := []string{"shop.example"}
	for _, c := range []struct {
		name        string
		p           account.Principal
		k           account.KeyOptions
		wantErr     apperr.Code
		wantExpires *time.Time
		mayRevoke   bool
	}{
		{"the same limits, no expiry named", limited, account.KeyOptions{Scopes: []string{"send"}, Domains: one}, "", &hour, false},
		{"the same limits, expiring sooner", limited, account.KeyOptions{Scopes: []string{"send"}, Domains: one, ExpiresAt: &sooner}, "", &sooner, true},
		{"the same limits, expiring with it", limited, account.KeyOptions{Scopes: []string{"send", "keys"}, Domains: one, ExpiresAt: &hour}, "", &hour, true},
		{"expiring later", limited, account.KeyOptions{Scopes: []string{"send"}, Domains: one, ExpiresAt: &later}, apperr.Invalid, nil, false},
		{"every scope", limited, account.KeyOptions{Domains: one, ExpiresAt: &sooner}, apperr.Forbidden, nil, false},
		{"every domain", limited, account.KeyOptions{Scopes: []string{"send"}, ExpiresAt: &sooner}, apperr.Forbidden, nil, false},
		{"unlimited from unlimited", full, account.KeyOptions{}, "", nil, true},
		{"expiring from unlimited", full, account.KeyOptions{ExpiresAt: &later}, "", &later, true},
	} {
		got, err := c.p.ChildKey(c.k)
		if apperr.CodeOf(err) != c.wantErr {
			t.Errorf("%s: ChildKey error %v, want %q", c.name, err, c.wantErr)
		}
		if e, ok := apperr.As(err); ok && e.Code == apperr.Invalid && e.Fields["expires_at"] == nil {
			t.Errorf("%s: %v does not name expires_at", c.name, err)
		}
		if err == nil && (got.ExpiresAt == nil) != (c.wantExpires == nil) || (got.ExpiresAt != nil && c.wantExpires != nil && !got.ExpiresAt.Equal(*c.wantExpires)) {
			t.Errorf("%s: child expires at %v, want %v", c.name, got.ExpiresAt, c.wantExpires)
		}
		k := account.Key{Scopes: c.k.Scopes, Domains: c.k.Domains, ExpiresAt: c.k.ExpiresAt}
		if may := c.p.MayRevoke(k); may != c.mayRevoke {
			t.Errorf("%s: MayRevoke = %v, want %v", c.name, may, c.mayRevoke)
		}
	}
}
