package validation

import (
	"cmp"
	"context"
	"fmt"
	"net/netip"
	"time"

	"github.com/postline/postline/internal/apperr"
	"github.com/postline/postline/internal/dnsclient"
)

// Mode selects how RFC warnings are judged.
type Mode string

// The modes.
const (
	// ModeStandard accepts any RFC 5322 address; RFC warnings are reported
	// but leave it valid.
	ModeStandard Mode = "standard"
	// ModeStrict rejects an address with any RFC warning, or longer than
	// 254 characters.
	ModeStrict Mode = "strict"
)

func (m Mode) check() error {
	if m != ModeStandard && m != ModeStrict {
		return apperr.Errorf(apperr.Internal, "validation: unknown mode %q", string(m))
	}
	return nil
}

// Result is the verdict on one address. The JSON tags are the API's field
// names except validated_at, which the HTTP layer renders itself.
type Result struct {
	// Email is the input exactly as given (also on cache hits).
	Email   string `json:"email"`
	IsValid bool   `json:"is_valid"`
	// Error is a human-readable failure message; nil when IsValid.
	Error *string `json:"error"`
	// Warnings are stable snake_case codes (see the package doc); never nil.
	Warnings []string `json:"warnings"`
	// Cached reports that the verdict was stored before this request.
	Cached bool `json:"cached"`
	// ValidatedAt is when the verdict was reached (UTC, millisecond
	// precision); a cached result keeps its original time.
	ValidatedAt   time.Time `json:"-"`
	IsSpamtrap    bool      `json:"is_spamtrap"`
	SpamtrapScore float64   `json:"spamtrap_score"`
	// Reason is the stable code of the failure (Reason* constants); empty
	// when IsValid.
	Reason string `json:"reason,omitempty"`
	// Suggestion is the likely intended address when the domain looks like
	// a typo of a well-known one; it never changes IsValid.
	Suggestion string `json:"suggestion,omitempty"`
	// Deliverability is one verdict to act on (deliverable, undeliverable,
	// risky, unknown) and DeliverabilityReasons its codes; see doc.go.
	Deliverability        string   `json:"deliverability"`
	DeliverabilityReasons []string `json:"deliverability_reasons"`
	// Mailbox is what a mailbox probe found; nil when none ran.
	Mailbox *Probe `json:"mailbox,omitempty"`
}

// Summary counts the entries of a batch: Valid+Invalid = Cached+Validated
// = Total.
type Summary struct {
	Total     int `json:"total"`
	Valid     int `json:"valid"`
	Invalid   int `json:"invalid"`
	Cached    int `json:"cached"`
	Validated int `json:"validated"`
}

// Cache stores definitive verdicts across processes (the lead's SQL
// store). Keys are described in the package doc. Get must return the
// Result as Put received it, ValidatedAt included (it has no JSON tag, so
// a store that serializes Result as JSON must keep it separately).
// Cached, IsSpamtrap and SpamtrapScore need not be kept: the validator
// sets them on every hit.
type Cache interface {
	// Get returns the result stored under key if it has not expired at now.
	Get(ctx context.Context, key string, now time.Time) (Result, bool, error)
	// Put stores r under key until expires, replacing any previous entry.
	Put(ctx context.Context, key string, r Result, expires time.Time) error
}

// Lists are the operator's block and allow lists. Answers are exact
// matches: the validator asks about a domain and each of its parents
// (a.b.example.com, b.example.com, example.com, com) itself. Domains are
// lower-case A-labels; addresses are the normalized address in lower case.
// Implementations must be safe for concurrent use.
type Lists interface {
	BlockedDomain(domain string) bool
	BlockedAddress(addr string) bool
	AllowedDomain(domain string) bool
	AllowedAddress(addr string) bool
}

// BounceHistory reports whether an address (normalized, lower case) has
// hard-bounced before for account (NoAccount, AllAccounts or an account
// id); it feeds the spamtrap score. It is asked for every verdict, cached
// ones too, so it should answer from memory (History does).
type BounceHistory interface {
	HardBounced(ctx context.Context, account int64, addr string) (bool, error)
}

// Resolver is the DNS the validator needs; *dnsclient.Resolver satisfies
// it, and its errors must be classifiable by dnsclient.IsNotFound,
// IsNoData and IsTemporary.
type Resolver interface {
	LookupMX(ctx context.Context, domain string) ([]dnsclient.MX, error)
	LookupIP(ctx context.Context, host string) ([]netip.Addr, error)
}

var _ Resolver = (*dnsclient.Resolver)(nil)

// Config configures a Validator.
type Config struct {
	// Resolver answers the DNS questions; required unless Offline.
	Resolver Resolver
	// Cache is the shared verdict store; nil means only the in-process LRU.
	Cache Cache
	// Lists are the operator lists; nil means none.
	Lists Lists
	// Bounces feeds the "previous hard bounce" spamtrap feature; nil
	// disables it.
	Bounces BounceHistory
	// CacheTTL is how long a definitive verdict is cached. Default 7 days.
	CacheTTL time.Duration
	// LRUSize is the number of verdicts kept in process. Default 10000;
	// negative disables the LRU.
	LRUSize int
	// SpamtrapThreshold is the score from which IsSpamtrap is true, in
	// (0, 1]. Default 0.5.
	SpamtrapThreshold float64
	// Concurrency bounds the addresses of one batch validated at once.
	// Default 16.
	Concurrency int
	// LookupTimeout bounds the DNS stage of one address (MX, then A/AAAA);
	// beyond it the verdict is dns_unavailable. Default 10s.
	LookupTimeout time.Duration
	// Offline skips DNS entirely: addresses passing the other checks are
	// valid with warning dns_not_checked, and nothing is cached.
	Offline bool
	// Refresh ignores cached verdicts: every address is validated anew and
	// its verdict replaces the cached one (`postline validate --refresh`).
	Refresh bool
	// Now is the clock. Default time.Now.
	Now func() time.Time
	// Probe permits mailbox probes (--validation-smtp-probe) for requests
	// that ask for one (WithMailboxCheck); nil permits none.
	Probe *ProbeConfig
}

// Validator runs the pipeline. It is safe for concurrent use.
type Validator struct {
	resolver      Resolver
	cache         Cache
	lists         Lists
	bounces       BounceHistory
	ttl           time.Duration
	lru           *lru // nil when disabled
	threshold     float64
	concurrency   int
	lookupTimeout time.Duration
	offline       bool
	refresh       bool
	now           func() time.Time
	prober        *prober // nil: probing is off
}

// New checks cfg, fills in its defaults and returns a Validator.
func New(cfg Config) (*Validator, error) {
	switch {
	case cfg.Resolver == nil && !cfg.Offline:
		return nil, fmt.Errorf("validation: Config.Resolver is required unless Offline is set")
	case cfg.CacheTTL < 0:
		return nil, fmt.Errorf("validation: Config.CacheTTL is negative (%v)", cfg.CacheTTL)
	case cfg.SpamtrapThreshold < 0 || cfg.SpamtrapThreshold > 1:
		return nil, fmt.Errorf("validation: Config.SpamtrapThreshold %v is outside (0, 1]", cfg.SpamtrapThreshold)
	case cfg.Concurrency < 0:
		return nil, fmt.Errorf("validation: Config.Concurrency is negative (%d)", cfg.Concurrency)
	case cfg.LookupTimeout < 0:
		return nil, fmt.Errorf("validation: Config.LookupTimeout is negative (%v)", cfg.LookupTimeout)
	}
	v := &Validator{
		resolver:      cfg.Resolver,
		cache:         cfg.Cache,
		lists:         cfg.Lists,
		bounces:       cfg.Bounces,
		ttl:           cmp.Or(cfg.CacheTTL, 7*24*time.Hour),
		threshold:     cmp.Or(cfg.SpamtrapThreshold, 0.5),
		concurrency:   cmp.Or(cfg.Concurrency, 16),
		lookupTimeout: cmp.Or(cfg.LookupTimeout, 10*time.Second),
		offline:       cfg.Offline,
		refresh:       cfg.Refresh,
		now:           cfg.Now,
	}
	if v.lists == nil {
		v.lists = &StaticLists{}
	}
	if cfg.Probe != nil && !cfg.Offline {
		if cfg.Probe.Helo == "" {
			return nil, fmt.Errorf("validation: ProbeConfig.Helo is required to probe mailboxes")
		}
		v.prober = newProber(*cfg.Probe, cfg.Resolver)
	}
	if v.now == nil {
		v.now = time.Now
	}
	if size := cmp.Or(cfg.LRUSize, 10000); size > 0 {
		v.lru = newLRU(size)
	}
	return v, nil
}
