package delivery

import (
	"cmp"
	"context"
	"slices"
	"strings"

	"github.com/postline/postline/internal/shaping"
)

// SiteShaping is what admission enforces on a site, for the operator's
// listing of the queue by site: through no particular egress source (a
// source's section may change it for that source).
type SiteShaping struct {
	Site     string
	Provider string // the shaping rules' provider; "" for none
	// Limits are the effective limits: the rules', with the Transport's
	// defaults for what they leave unset, and the SetConfig overrides in
	// force over them.
	Limits shaping.Limits
	// Overridden names the keys a SetConfig override in force sets.
	Overridden []string
}

// DirectShaping is the shaping of the site direct delivery to domain goes
// to, named as SiteOf names it; a zero SiteShaping for a null MX.
func (t *Transport) DirectShaping(ctx context.Context, domain string) (SiteShaping, error) {
	domain = strings.ToLower(domain)
	hosts, _, e := t.mxHosts(ctx, domain)
	switch {
	case e != nil && e.Enhanced == "5.1.10":
		return SiteShaping{}, nil
	case e != nil:
		return SiteShaping{}, e
	}
	s := t.settings(domain, hosts, "")
	return t.siteShaping(ctx, cmp.Or(s.Site, shaping.SiteName(hosts)), s, false), nil
}

// RelayShaping is the shaping of the relay host, as admission reads it.
func (t *Transport) RelayShaping(ctx context.Context, host string) SiteShaping {
	host = strings.ToLower(strings.TrimSuffix(host, "."))
	return t.siteShaping(ctx, host, t.settings(host, []string{host}, ""), true)
}

func (t *Transport) siteShaping(ctx context.Context, site string, s shaping.Settings, relay bool) SiteShaping {
	out := SiteShaping{Site: site, Provider: s.Provider, Limits: t.defaults(relay).With(s.Limits)}
	if t.cfg.Overrides != nil {
		o := t.cfg.Overrides(ctx, site)
		for _, kv := range o.KeyValues() {
			out.Overridden = append(out.Overridden, kv.Key)
		}
		out.Limits = out.Limits.With(o)
	}
	return out
}

// defaults are DefaultShaping with this Transport's connection limit (a
// relay's or a site's) and idle timeout (limitsOf's defaults).
func (t *Transport) defaults(relay bool) shaping.Limits {
	l := DefaultShaping()
	l.ConnectionLimit = shaping.Limit{N: t.defaultConns(relay)}
	if t.cfg.IdleTimeout > 0 {
		l.IdleTimeout = t.cfg.IdleTimeout
	}
	return l
}

// shownKeys are the limits the operator's listing by site shows.
var shownKeys = []string{"connection_limit", "max_connection_rate", "max_message_rate", "max_deliveries_per_connection"}

// LimitValue is one limit as the operator's listing shows it.
type LimitValue struct {
	Key   string // KumoMTA's name: connection_limit, max_message_rate...
	Value string // as a shaping file writes it ("4", "100/h"); "" when none applies
	// Overridden says a SetConfig override in force set it.
	Overridden bool
}

// Shown is connection_limit, max_connection_rate, max_message_rate and
// max_deliveries_per_connection, in that order.
func (s SiteShaping) Shown() []LimitValue {
	set := map[string]string{}
	for _, kv := range s.Limits.KeyValues() {
		set[kv.Key] = kv.Value
	}
	out := make([]LimitValue, len(shownKeys))
	for i, k := range shownKeys {
		out[i] = LimitValue{Key: k, Value: set[k], Overridden: slices.Contains(s.Overridden, k)}
	}
	return out
}
