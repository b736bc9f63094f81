package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/postline/postline/internal/app"
	"github.com/postline/postline/internal/delivery"
	"github.com/postline/postline/internal/dnsclient"
	"github.com/postline/postline/internal/sending"
	"github.com/postline/postline/internal/shaping"
	"github.com/postline/postline/internal/suspend"
)

func shapingCommands() *cmd {
	return &cmd{name: "shaping", summary: "traffic shaping: the limits and rules mail to a destination follows", subs: []*cmd{
		{name: "show", args: "DOMAIN", destination: true,
			summary: "print a destination domain's site, provider, effective limits and automation rules",
			help: "Reads the same settings as `serve` (--shaping-file, --dns-server) and resolves DOMAIN's MX hosts;\n" +
				"it only reads the database (the automation actions in force), so it runs beside a running\n" +
				"server on the same data directory. Limits are printed one a line as\n" +
				"KEY = VALUE with KumoMTA's key names, as serve enforces them: a key no file sets shows\n" +
				"Postline's default, marked \"# default\" (keys without one, such as rates, are left out).\n" +
				"With --egress-file, the egress pools that may carry the mail follow (--pool: only that one),\n" +
				"`egress_pool = NAME` and then its sources one a line: `egress_source = NAME weight=N\n" +
				"source_address=IP ehlo_domain=NAME warmup_cap=N warmup_used=N` (today's UTC cap and the count\n" +
				"every process shares; warmup_cap=none without a cap).",
			setup: setupShapingShow, minArgs: 1, maxArgs: 1},
		{name: "status", summary: "list the automation actions in force, and those of the last 7 days with when they ended",
			help: "Actions automation rules put in force (Suspend, SuspendTenant, SetConfig) are shared by every\n" +
				"process through the database; this lists those in force now, oldest first, then the history:\n" +
				"every action put in force in the last 7 days (or still in force), newest first, with when and\n" +
				"how it ended (expired, resumed, replaced).",
			setup: setupShapingStatus, maxArgs: 0},
	}}
}

func setupShapingShow(fs *flag.FlagSet) runFunc {
	source := fs.String("source", "", "the egress `SOURCE` whose per-source sections apply")
	pool := fs.String("pool", "", "with --egress-file: list only this egress `pool` (default: every pool of the file)")
	return func(ctx context.Context, x *inv) error {
		if *pool != "" && x.cfg.EgressFile == "" {
			return usagef("--pool needs --egress-file (POSTLINE_EGRESS_FILE)")
		}
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
		if x.cfg.EgressFile != "" {
			return printEgress(ctx, x, x.stdout, *pool)
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
// site (suspensions, overrides, with their expiry), one line each. When
// the database cannot be opened it says so on stderr and lists none: the
// limits above do not depend on it.
func actionsInForce(ctx context.Context, x *inv, s shaping.Settings) ([]string, error) {
	a, err := x.app(ctx)
	if err != nil {
		fmt.Fprintf(x.stderr, "note: actions in force unknown: %v\n", err)
		return nil, nil
	}
	list, err := sending.InForce(ctx, a.Suspensions)
	if err != nil {
		return nil, err
	}
	var out []string
	for _, sp := range list {
		if sending.ActionSite(sp) == s.Site {
			out = append(out, fmt.Sprintf("%s until %s  # %s, rule %s, reply %q", sp.Action, untilText(sp),
				actionTarget(sp), sp.Rule, sp.Reply))
		}
	}
	return out, nil
}

// actionTarget says what an action holds or changes.
func actionTarget(sp suspend.Suspension) string {
	switch sp.Kind {
	case suspend.Tenant:
		return "account " + sp.Value[:strings.LastIndexByte(sp.Value, '@')] + " at the site"
	case suspend.Override:
		return "the site's " + sp.Value[:strings.LastIndexByte(sp.Value, '@')]
	}
	return "the site"
}

func setupShapingStatus(*flag.FlagSet) runFunc {
	return func(ctx context.Context, x *inv) error {
		a, err := x.app(ctx)
		if err != nil {
			return err
		}
		list, err := sending.InForce(ctx, a.Suspensions)
		if err != nil {
			return err
		}
		if len(list) == 0 {
			fmt.Fprintln(x.stdout, "(no automation action in force)")
		} else {
			tw := tabwriter.NewWriter(x.stdout, 0, 4, 2, ' ', 0)
			fmt.Fprintln(tw, "SITE\tACTION\tTARGET\tRULE\tREPLY\tSINCE\tUNTIL")
			for _, sp := range list {
				fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\n", sending.ActionSite(sp), sp.Action, actionTarget(sp), sp.Rule,
					sp.Reply, sp.CreatedAt.UTC().Format(time.RFC3339), untilText(sp))
			}
			tw.Flush()
		}
		hist, err := sending.History(ctx, a.Suspensions)
		if err != nil || len(hist) == 0 {
			return err
		}
		fmt.Fprintln(x.stdout, "\nhistory (the last 7 days, newest first):")
		tw := tabwriter.NewWriter(x.stdout, 0, 4, 2, ' ', 0)
		fmt.Fprintln(tw, "SITE\tACTION\tTARGET\tRULE\tREPLY\tSINCE\tENDED")
		now := a.Suspensions.Now()
		for _, sp := range hist {
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\n", sending.ActionSite(sp), sp.Action, actionTarget(sp), sp.Rule,
				sp.Reply, sp.CreatedAt.UTC().Format(time.RFC3339), endText(sp, now))
		}
		return tw.Flush()
	}
}

// endText says when and how an action ended ("expired 2026-...Z"), or
// "in force" with its end.
func endText(sp suspend.Suspension, now time.Time) string {
	if at, how, ok := sp.End(now); ok {
		return how + " " + at.UTC().Format(time.RFC3339)
	}
	return "in force until " + untilText(sp)
}
