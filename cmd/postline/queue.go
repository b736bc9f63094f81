package main

import (
	"cmp"
	"context"
	"flag"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/postline/postline/internal/sending"
	"github.com/postline/postline/internal/shaping"
	"github.com/postline/postline/internal/suspend"
)

func queueCommands() *cmd {
	sel := "--site NAME|--domain DOMAIN|--account LOGIN"
	return &cmd{name: "queue", summary: "the delivery queue: what waits, suspensions, retry and bounce", subs: []*cmd{
		{name: "list", summary: "count waiting deliveries by state per site, sending domain or account, and list the suspensions",
			help: "--by site names each recipient domain's site from its MX hosts, looked up through --dns-server\n" +
				"(as `postline shaping show` names them; a relay by its host); a domain whose MX hosts cannot be\n" +
				"looked up is listed under its own name. HELD counts the deliveries put back for a site\n" +
				"suspension. It then lists each site's provider and the limits delivery enforces on it\n" +
				"(--shaping-file as serve reads it, or the built-in rules; a SetConfig override in force is\n" +
				"marked \"(override)\").",
			setup: setupQueueList, maxArgs: 0},
		{name: "suspend", summary: "hold the deliveries to a site or from a sending domain or an account: " + sel,
			help: "Held deliveries are not attempts: they wait, pending or deferred, with no log entry, until\n" +
				"--duration has passed (\"90m\", \"2 hours\"; without it, until `postline queue resume`). Running\n" +
				"servers see it within a second; it survives restarts. Suspending the same one again replaces it.",
			setup: setupQueueSuspend, maxArgs: 0},
		{name: "resume", summary: "end a suspension (" + sel + "): its deliveries are due at once",
			setup: setupQueueResume, maxArgs: 0},
		{name: "retry", summary: "make deferred deliveries due now: every one, or a site's, a domain's or an account's",
			setup: setupQueueRetry, maxArgs: 0},
		{name: "bounce", summary: "fail the queued deliveries of a site, a domain or an account with --reason (logged failed)",
			help: "Every selected delivery that waits (pending or deferred, held or not; never one being attempted)\n" +
				"becomes failed, logged as a failed entry with details.reason the reason given.",
			setup: setupQueueBounce, maxArgs: 0},
	}}
}

// selectorFlags are --site, --domain and --account.
type selectorFlags struct{ site, domain, account *string }

func addSelectorFlags(fs *flag.FlagSet) selectorFlags {
	return selectorFlags{
		site:    fs.String("site", "", "a destination `SITE` (as `postline queue list --by site` names it) or a relay host"),
		domain:  fs.String("domain", "", "a sending `DOMAIN`"),
		account: fs.String("account", "", "an account's `LOGIN`: every domain it owns"),
	}
}

// selector returns the one selector given (none: every delivery, unless
// required).
func (f selectorFlags) selector(required bool) (sending.Selector, error) {
	var sel sending.Selector
	n := 0
	for _, s := range []struct {
		kind suspend.Kind
		v    string
	}{{suspend.Site, *f.site}, {suspend.Domain, *f.domain}, {suspend.Account, *f.account}} {
		if s.v != "" {
			sel, n = sending.Selector{Kind: s.kind, Value: s.v}, n+1
		}
	}
	switch {
	case n > 1:
		return sel, usagef("give one of --site, --domain and --account")
	case n == 0 && required:
		return sel, usagef("give --site NAME, --domain DOMAIN or --account LOGIN")
	}
	return sel, nil
}

// queueFields names the service's fields as the queue commands' flags.
var queueFields = map[string]string{"site": "--site", "domain": "--domain", "account": "--account", "duration": "--duration",
	"reason": "--reason", "selector": "--site/--domain/--account", "by": "--by"}

func (x *inv) queue(ctx context.Context) (*sending.Queue, error) {
	x.fields = queueFields
	a, err := x.app(ctx)
	if err != nil {
		return nil, err
	}
	return a.Queue, nil
}

func setupQueueList(fs *flag.FlagSet) runFunc {
	by := choiceFlag(fs, "by", "group by (default domain)", "site", "domain", "account")
	return func(ctx context.Context, x *inv) error {
		q, err := x.queue(ctx)
		if err != nil {
			return err
		}
		kind := suspend.Kind(*by)
		if kind == "" {
			kind = suspend.Domain
		}
		if kind == suspend.Site {
			// The limits shown are those serve enforces: its shaping rules.
			if err := x.a.LoadShaping(ctx); err != nil {
				return err
			}
		}
		groups, err := q.Groups(ctx, kind)
		if err != nil {
			return err
		}
		tw := tabwriter.NewWriter(x.stdout, 0, 4, 2, ' ', 0)
		if kind == suspend.Site {
			fmt.Fprintln(tw, "SITE\tPENDING\tDEFERRED\tSENDING\tHELD\tSUSPENDED")
		} else {
			fmt.Fprintf(tw, "%s\tPENDING\tDEFERRED\tSENDING\tSUSPENDED\n", strings.ToUpper(string(kind)))
		}
		for _, g := range groups {
			held := "-"
			if g.Suspension != nil {
				held = suspensionText(*g.Suspension)
			}
			if kind == suspend.Site {
				fmt.Fprintf(tw, "%s\t%d\t%d\t%d\t%d\t%s\n", g.Name, g.Pending, g.Deferred, g.Sending, g.Held, held)
			} else {
				fmt.Fprintf(tw, "%s\t%d\t%d\t%d\t%s\n", g.Name, g.Pending, g.Deferred, g.Sending, held)
			}
		}
		tw.Flush()
		if len(groups) == 0 {
			fmt.Fprintln(x.stdout, "(nothing waiting)")
		} else if kind == suspend.Site {
			printSiteLimits(x.stdout, groups)
		}
		list, err := q.Suspensions(ctx)
		if err != nil || len(list) == 0 {
			return err
		}
		fmt.Fprintln(x.stdout, "\nsuspensions:")
		tw = tabwriter.NewWriter(x.stdout, 0, 4, 2, ' ', 0)
		fmt.Fprintln(tw, "ID\tKIND\tVALUE\tUNTIL\tBY\tREASON")
		for _, sp := range list {
			fmt.Fprintf(tw, "%d\t%s\t%s\t%s\t%s\t%s\n", sp.ID, sp.Kind, sp.Value, untilText(sp), sp.CreatedBy, sp.Reason)
		}
		return tw.Flush()
	}
}

// printSiteLimits writes the sites' provider and effective limits, one
// site a line; "-" where no limit applies, "(override)" after a value a
// SetConfig override in force sets.
func printSiteLimits(w io.Writer, groups []sending.Group) {
	fmt.Fprintln(w, "\nsite limits (per egress source, as delivery enforces them):")
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "SITE\tPROVIDER\tCONNECTION_LIMIT\tMAX_CONNECTION_RATE\tMAX_MESSAGE_RATE\tMAX_DELIVERIES_PER_CONNECTION")
	for _, g := range groups {
		if g.Shaping == nil {
			fmt.Fprintf(tw, "%s\t(unknown: its MX hosts could not be looked up)\n", g.Name)
			continue
		}
		cells := []string{g.Name, cmp.Or(g.Shaping.Provider, "-")}
		for _, v := range g.Shaping.Shown() {
			c := cmp.Or(v.Value, "-")
			if v.Overridden {
				c += " (override)"
			}
			cells = append(cells, c)
		}
		fmt.Fprintln(tw, strings.Join(cells, "\t"))
	}
	tw.Flush()
}

func untilText(sp suspend.Suspension) string {
	if sp.Until == nil {
		return "resumed"
	}
	return sp.Until.UTC().Format(time.RFC3339)
}

// suspensionText is a suspension in one cell: "until 2026-...Z: reason".
func suspensionText(sp suspend.Suspension) string {
	s := "until " + untilText(sp)
	if sp.Reason != "" {
		s += ": " + sp.Reason
	}
	return s
}

func setupQueueSuspend(fs *flag.FlagSet) runFunc {
	sf := addSelectorFlags(fs)
	duration := fs.String("duration", "", "how long, `D` (\"90m\", \"2 hours\"); without it, until resumed")
	reason := fs.String("reason", "", "why (`TEXT`), shown with the suspension")
	return func(ctx context.Context, x *inv) error {
		sel, err := sf.selector(true)
		if err != nil {
			return err
		}
		req := suspend.Request{Kind: sel.Kind, Value: sel.Value, Reason: *reason, By: "cli"}
		if *duration != "" {
			if req.Duration, err = shaping.ParseDuration(*duration); err != nil {
				return usagef("--duration: %v", err)
			}
		}
		q, err := x.queue(ctx)
		if err != nil {
			return err
		}
		sp, err := q.Suspend(ctx, req)
		if err != nil {
			return err
		}
		fmt.Fprintf(x.stdout, "suspended %s %s %s (id %d)\n", sp.Kind, sp.Value, suspensionText(sp), sp.ID)
		return nil
	}
}

func setupQueueResume(fs *flag.FlagSet) runFunc {
	sf := addSelectorFlags(fs)
	return func(ctx context.Context, x *inv) error {
		sel, err := sf.selector(true)
		if err != nil {
			return err
		}
		q, err := x.queue(ctx)
		if err != nil {
			return err
		}
		sp, err := q.ResumeOf(ctx, sel)
		if err != nil {
			return err
		}
		fmt.Fprintf(x.stdout, "resumed %s %s: its deliveries are due now\n", sp.Kind, sp.Value)
		return nil
	}
}

func setupQueueRetry(fs *flag.FlagSet) runFunc {
	sf := addSelectorFlags(fs)
	return func(ctx context.Context, x *inv) error {
		sel, err := sf.selector(false)
		if err != nil {
			return err
		}
		q, err := x.queue(ctx)
		if err != nil {
			return err
		}
		n, err := q.Retry(ctx, sel)
		if err != nil {
			return err
		}
		fmt.Fprintf(x.stdout, "%d deferred deliveries due now\n", n)
		return nil
	}
}

func setupQueueBounce(fs *flag.FlagSet) runFunc {
	sf := addSelectorFlags(fs)
	reason := fs.String("reason", "", "why, `TEXT` (required): logged as the failed entries' details.reason")
	return func(ctx context.Context, x *inv) error {
		sel, err := sf.selector(true)
		if err != nil {
			return err
		}
		if strings.TrimSpace(*reason) == "" {
			return usagef("--reason is required: it is logged with every delivery failed")
		}
		q, err := x.queue(ctx)
		if err != nil {
			return err
		}
		n, err := q.Bounce(ctx, sel, *reason)
		if err != nil {
			return err
		}
		fmt.Fprintf(x.stdout, "%d queued deliveries failed (reason: %s)\n", n, strings.TrimSpace(*reason))
		return nil
	}
}
