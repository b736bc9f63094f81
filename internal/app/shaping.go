package app

import (
	"context"
	"log/slog"

	"github.com/postline/postline/internal/config"
	"github.com/postline/postline/internal/dnsclient"
	"github.com/postline/postline/internal/shaping"
)

// NewShapingWatcher loads the shaping rules as `serve` delivers by them:
// the --shaping-file files in order (none: the built-in rules), with each
// mx_rollup domain section resolved to its site through the resolver. It
// logs what the files hold that Postline ignores, once. An error is a
// start-up error; once started, the Watcher keeps the rules in force when
// a changed file does not load. `postline shaping show` reads the rules
// through it too, so it shows what serve enforces.
func NewShapingWatcher(ctx context.Context, cfg config.Config, r *dnsclient.Resolver, log *slog.Logger) (*shaping.Watcher, error) {
	return shaping.NewWatcher(ctx, shaping.WatcherConfig{Paths: cfg.ShapingFiles, LookupMX: MXLookup(r), Logger: log})
}

// startShaping puts serve's shaping rules in force for delivery and
// reloads them when a file changes, until Close.
func (a *App) startShaping(ctx context.Context) error {
	w, err := NewShapingWatcher(ctx, a.Config, a.Resolver, a.Logger)
	if err != nil {
		return err
	}
	if err := w.Start(ctx); err != nil {
		return err
	}
	a.shaping.Store(w)
	a.closers = append(a.closers, func() error { w.Stop(); return nil })
	return nil
}

// LoadShaping loads the shaping rules as serve does, once, for a command
// that shows what delivery enforces (`postline queue list --by site`):
// they are not watched. Serve's rules (StartWorkers) are kept.
func (a *App) LoadShaping(ctx context.Context) error {
	if a.shaping.Load() != nil {
		return nil
	}
	w, err := NewShapingWatcher(ctx, a.Config, a.Resolver, a.Logger)
	if err != nil {
		return err
	}
	a.shaping.CompareAndSwap(nil, w)
	return nil
}

// shapingRules are the rules delivery enforces: serve's, once it started
// (a command that never delivers loads none).
func (a *App) shapingRules() *shaping.Rules {
	if w := a.shaping.Load(); w != nil {
		return w.Rules()
	}
	return nil
}

// MXLookup adapts the resolver to what shaping needs: a domain's MX host
// names, as direct delivery tries them (the domain itself when it has no
// MX records, RFC 5321 §5.1; none for a null MX, RFC 7505).
func MXLookup(r *dnsclient.Resolver) shaping.MXLookup {
	return func(ctx context.Context, domain string) ([]string, error) {
		mxs, err := r.LookupMX(ctx, domain)
		switch {
		case dnsclient.IsNoData(err):
			return []string{domain}, nil
		case err != nil:
			return nil, err
		}
		var hosts []string
		for _, mx := range mxs {
			if mx.Host != "." && mx.Host != "" {
				hosts = append(hosts, mx.Host)
			}
		}
		return hosts, nil
	}
}
