package main

import (
	"context"
	"fmt"
	"io"
	"text/tabwriter"
	"time"

	"github.com/postline/postline/internal/app"
	"github.com/postline/postline/internal/domain"
)

// domainArgs is how many positional arguments each subcommand takes.
var domainArgs = map[string]int{"add": 2, "list": 1, "show": 1, "verify": 1, "set-tracking": 2, "set-auth": 2, "track": 1, "remove": 1}

func cmdDomain(ctx context.Context, e env, args []string) error {
	if len(args) == 0 {
		return usagef("want domain add|list|show|verify|set-tracking|set-auth|track|remove")
	}
	sub := args[0]
	n, ok := domainArgs[sub]
	if !ok {
		return usagef("unknown subcommand %q", sub)
	}
	fs, l := flags(e, "domain "+sub)
	direct := fs.Bool("direct", false, "add: deliver straight to recipients' MX hosts")
	var del domain.Delivery
	fs.StringVar(&del.Host, "smtp-host", "", "add: SMTP relay host")
	fs.IntVar(&del.Port, "smtp-port", 0, "add: SMTP relay port (default 587)")
	fs.StringVar(&del.User, "smtp-user", "", "add: SMTP relay user")
	fs.StringVar(&del.Password, "smtp-password", "", "add: SMTP relay password (stored encrypted)")
	fs.StringVar(&del.TLS, "smtp-tls", "", "add: none, starttls or tls (default starttls)")
	force := fs.Bool("force", false, "verify: mark verified without DNS lookups (operator override)")
	var sw switches
	fs.StringVar(&sw.opens, "opens", "", "track: on or off (open pixel)")
	fs.StringVar(&sw.clicks, "clicks", "", "track: on or off (click URLs)")
	fs.StringVar(&sw.unsubscribe, "unsubscribe", "", "track: on or off (List-Unsubscribe, one-click)")
	pos, cfg, err := parse(fs, l, args[1:])
	if err != nil {
		return err
	}
	if len(pos) != n {
		return usagef("domain %s takes %d argument(s), got %d", sub, n, len(pos))
	}
	if sub == "add" {
		switch {
		case *direct && del.Host != "":
			return usagef("give either --direct or --smtp-host, not both")
		case *direct:
			del = domain.Delivery{Mode: domain.ModeDirect}
		case del.Host != "":
			del.Mode = domain.ModeSMTP
		default:
			return usagef("give --direct or --smtp-host H --smtp-port P")
		}
	}
	a, err := openApp(ctx, e, cfg)
	if err != nil {
		return err
	}
	defer a.Close()
	if sub == "track" {
		return runTrack(ctx, e, a, pos[0], sw)
	}
	return runDomain(ctx, e, a, sub, pos, del, *force)
}

// switches are the track subcommand's flags: "on", "off" or "" (unchanged).
type switches struct{ opens, clicks, unsubscribe string }

func runTrack(ctx context.Context, e env, a *app.App, name string, sw switches) error {
	d, err := a.Domains.Get(ctx, name)
	if err != nil {
		return err
	}
	t := d.Tracking
	for _, f := range []struct {
		name, value string
		out         *bool
	}{{"opens", sw.opens, &t.Opens}, {"clicks", sw.clicks, &t.Clicks}, {"unsubscribe", sw.unsubscribe, &t.Unsubscribe}} {
		switch f.value {
		case "":
		case "on":
			*f.out = true
		case "off":
			*f.out = false
		default:
			return usagef("--%s wants on or off, got %q", f.name, f.value)
		}
	}
	if d, err = a.Domains.SetTrackingOptions(ctx, d, t); err != nil {
		return err
	}
	fmt.Fprintf(e.stdout, "%s tracking: %s\n", d.Name, trackingText(d.Tracking))
	return nil
}

func trackingText(t domain.Tracking) string {
	onOff := func(b bool) string {
		if b {
			return "on"
		}
		return "off"
	}
	return fmt.Sprintf("opens %s, clicks %s, unsubscribe %s", onOff(t.Opens), onOff(t.Clicks), onOff(t.Unsubscribe))
}

func runDomain(ctx context.Context, e env, a *app.App, sub string, pos []string, del domain.Delivery, force bool) error {
	svc := a.Domains
	switch sub {
	case "add":
		acc, err := a.Accounts.User(ctx, pos[0])
		if err != nil {
			return err
		}
		d, err := svc.Add(ctx, domain.AddParams{AccountID: acc.ID, Name: pos[1], Delivery: del, Trusted: true})
		if err != nil {
			return err
		}
		fmt.Fprintf(e.stdout, "added %s for %s; publish these records, then run `postline domain verify %s`:\n", d.Name, acc.Login, d.Name)
		return printRecords(e.stdout, svc.Records(d))
	case "list":
		acc, err := a.Accounts.User(ctx, pos[0])
		if err != nil {
			return err
		}
		list, err := svc.List(ctx, acc.ID)
		if err != nil {
			return err
		}
		tw := tabwriter.NewWriter(e.stdout, 0, 4, 2, ' ', 0)
		fmt.Fprintln(tw, "DOMAIN\tVERIFIED\tDELIVERY\tTRACKING\tAUTH")
		for _, d := range list {
			fmt.Fprintf(tw, "%s\t%v\t%s\t%s\t%s\n", d.Name, d.Verified(), deliveryText(d.Delivery), dash(d.TrackingDomain), dash(d.AuthDomain))
		}
		return tw.Flush()
	}
	d, err := svc.Get(ctx, pos[0])
	if err != nil {
		return err
	}
	switch sub {
	case "show":
		verified := "no"
		if d.VerifiedAt != nil {
			verified = d.VerifiedAt.Format(time.RFC3339)
		}
		fmt.Fprintf(e.stdout, "domain:    %s\nverified:  %s\ndelivery:  %s\ntracking:  %s (%s)\nauth:      %s\nselector:  %s\n\n",
			d.Name, verified, deliveryText(d.Delivery), dash(d.TrackingDomain), trackingText(d.Tracking), dash(d.AuthDomain), d.DKIMSelector)
		return printRecords(e.stdout, svc.Records(d))
	case "verify":
		d, recs, err := svc.Verify(ctx, d, force)
		if err != nil {
			return err
		}
		if force {
			fmt.Fprintf(e.stdout, "%s marked verified without DNS checks (--force)\n", d.Name)
			return nil
		}
		if err := printRecords(e.stdout, recs); err != nil {
			return err
		}
		if !d.Verified() {
			return fmt.Errorf("%s is not verified: publish the records marked missing or mismatch", d.Name)
		}
		fmt.Fprintf(e.stdout, "%s is verified\n", d.Name)
	case "set-tracking", "set-auth":
		set, what := svc.SetTracking, "tracking"
		if sub == "set-auth" {
			set, what = svc.SetAuth, "authentication"
		}
		if d, err = set(ctx, d, pos[1]); err != nil {
			return err
		}
		fmt.Fprintf(e.stdout, "%s domain of %s set; publish:\n", what, d.Name)
		return printRecords(e.stdout, svc.Records(d))
	case "remove":
		if err := svc.Remove(ctx, d); err != nil {
			return err
		}
		fmt.Fprintf(e.stdout, "removed %s\n", d.Name)
	}
	return nil
}

func deliveryText(d domain.Delivery) string {
	if d.Mode == domain.ModeDirect {
		return "direct to MX"
	}
	s := fmt.Sprintf("relay %s:%d (%s)", d.Host, d.Port, d.TLS)
	if d.User != "" {
		s += " as " + d.User
	}
	return s
}

func dash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

func printRecords(w io.Writer, recs []domain.Record) error {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "PURPOSE\tTYPE\tNAME\tVALUE\tREQUIRED\tSTATUS")
	for _, r := range recs {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%v\t%s\n", r.Purpose, r.Type, r.Name, r.Value, r.Required, dash(r.Status))
	}
	return tw.Flush()
}
