package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"strings"

	"github.com/postline/postline/internal/app"
	"github.com/postline/postline/internal/delivery"
	"github.com/postline/postline/internal/dnsclient"
	"github.com/postline/postline/internal/shaping"
)

func shapingCommands() *cmd {
	return &cmd{name: "shaping", summary: "traffic shaping: the limits and rules mail to a destination follows", subs: []*cmd{
		{name: "show", args: "DOMAIN", destination: true,
			summary: "print a destination domain's site, provider, effective limits and automation rules",
			help: "Reads the same settings as `serve` (--shaping-file, --dns-server) and resolves DOMAIN's MX hosts;\n" +
				"it opens no database, so it runs beside a running server. Limits are printed one a line as\n" +
				"KEY = VALUE with KumoMTA's key names, as serve enforces them: a key no file sets shows\n" +
				"Postline's default, marked \"# default\" (keys without one, such as rates, are left out).",
			setup: setupShapingShow, minArgs: 1, maxArgs: 1},
	}}
}

func setupShapingShow(fs *flag.FlagSet) runFunc {
	source := fs.String("source", "", "the egress `SOURCE` whose per-source sections apply")
	return func(ctx context.Context, x *inv) error {
		resolver, err := dnsclient.New(dnsclient.Config{Server: x.cfg.DNSServer})
		if err != nil {
			return err
		}
		lookup := app.MXLookup(resolver)
		// The rules as serve loads them (files, sites, warnings).
		w, err := app.NewShapingWatcher(ctx, x.cfg, resolver,
			slog.New(slog.NewTextHandler(x.stderr, &slog.HandlerOptions{ReplaceAttr: dropTime})))
		if err != nil {
			return err
		}
		rules := w.Rules()
		domain := strings.ToLower(strings.TrimSuffix(x.args[0], "."))
		hosts, err := lookup(ctx, domain)
		if err != nil {
			return fmt.Errorf("cannot resolve the MX hosts of %s: %w", domain, err)
		}
		if len(hosts) == 0 {
			fmt.Fprintf(x.stderr, "note: %s has a null MX: it accepts no mail\n", domain)
		}
		s := rules.For(domain, hosts, *source)
		printShaping(x.stdout, rules, hosts, s)
		inForce, err := actionsInForce(ctx, x, s)
		if err != nil {
			return err
		}
		for _, a := range inForce {
			fmt.Fprintf(x.stdout, "in_force = %s\n", a)
		}
		return nil
	}
}

// printShaping writes what `shaping show` shows: comments saying which
// rules and MX hosts, then one KEY = VALUE a line.
func printShaping(w io.Writer, rules *shaping.Rules, hosts []string, s shaping.Settings) {
	files := "built-in"
	if f := rules.Files(); f != nil {
		files = strings.Join(f, ", ")
	}
	fmt.Fprintf(w, "# rules: %s\n# mx: %s\n", files, strings.Join(hosts, ", "))
	fmt.Fprintf(w, "site = %s\n", s.Site)
	provider := s.Provider
	if provider == "" {
		provider = "(none)"
	}
	fmt.Fprintf(w, "provider = %s\n", provider)
	if s.Source != "" {
		fmt.Fprintf(w, "source = %s\n", s.Source)
	}
	fmt.Fprintf(w, "mx_rollup = %t\n", s.MXRollup)
	set := map[string]bool{}
	for _, kv := range s.KeyValues() {
		set[kv.Key] = true
	}
	// What serve enforces: the files' values, and delivery's own where
	// they set none.
	for _, kv := range delivery.DefaultShaping().With(s.Limits).KeyValues() {
		note := ""
		if !set[kv.Key] {
			note = "  # default"
		}
		fmt.Fprintf(w, "%s = %s%s\n", kv.Key, kv.Value, note)
	}
	for _, pl := range s.ProviderLimits {
		whose := ""
		if len(s.ProviderLimits) > 1 {
			whose = fmt.Sprintf("  # provider %q", pl.Provider)
		}
		if pl.ConnectionLimit.IsSet() {
			fmt.Fprintf(w, "provider_connection_limit = %s%s\n", pl.ConnectionLimit, whose)
		}
		if pl.MaxMessageRate.IsSet() {
			fmt.Fprintf(w, "provider_max_message_rate = %s%s\n", pl.MaxMessageRate, whose)
		}
	}
	for _, r := range s.Automation {
		fmt.Fprintf(w, "automation = %s  # %s, %s:%d\n", r, r.Origin, r.File, r.Line)
	}
}

// dropTime leaves the time out of warnings printed by a command.
func dropTime(groups []string, a slog.Attr) slog.Attr {
	if len(groups) == 0 && a.Key == slog.TimeKey {
		return slog.Attr{}
	}
	return a
}

// actionsInForce lists the automation actions in force for the settings'
// site (suspensions, overrides, with their expiry), one line each.
//
// TODO(issue 29, automation): actions are not recorded yet; read them from
// where response-driven automation stores them once it does. Until then
// none can be in force.
func actionsInForce(context.Context, *inv, shaping.Settings) ([]string, error) {
	return nil, nil
}
