package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/postline/postline/internal/app"
	"github.com/postline/postline/internal/domain"
)

// deliveryFields names the delivery flags for the domain service's field errors.
var deliveryFields = map[string]string{"delivery.mode": "--direct/--smtp-host", "delivery.host": "--smtp-host",
	"delivery.port": "--smtp-port", "delivery.user": "--smtp-user", "delivery.password": "--smtp-password",
	"delivery.tls": "--smtp-tls", "delivery.pool": "--pool", "name": "DOMAIN", "host": "HOST"}

func domainCommands() *cmd {
	one := func(run func(ctx context.Context, x *inv, a *app.App, d domain.Domain) error) func(*flag.FlagSet) runFunc {
		return func(*flag.FlagSet) runFunc { return onDomain(run) }
	}
	return &cmd{name: "domain", summary: "sending domains", subs: []*cmd{
		{name: "add", args: "LOGIN DOMAIN",
			summary: "add a sending domain for LOGIN with a new DKIM key and print the DNS records to publish",
			help: "Give --direct to deliver to the recipients' MX hosts, or --smtp-host (and --smtp-port,\n" +
				"--smtp-user, --smtp-password, --smtp-tls) to relay through an SMTP server.",
			minArgs: 2, maxArgs: 2, setup: setupDomainAdd},
		{name: "list", args: "LOGIN", summary: "list LOGIN's domains", minArgs: 1, maxArgs: 1, setup: setupDomainList},
		{name: "show", args: "DOMAIN", summary: "show a domain's settings and the DNS records to publish",
			minArgs: 1, maxArgs: 1, setup: one(domainShow)},
		{name: "update", args: "DOMAIN",
			summary: "change how a domain's mail leaves (relay or direct), whether it receives mail (--inbound) or adds an Ed25519 signature (--dkim-ed25519); the DKIM key and everything else stay",
			help: "Only the flags given change: --smtp-password alone replaces the relay password, --direct\n" +
				"switches to direct delivery and drops the relay settings, --smtp-host switches to a relay.\n" +
				"--inbound takes mail for the domain's addresses (once verified; routes decide what becomes of it), --inbound=false stops.\n" +
				"--dkim-ed25519 signs every message with an Ed25519 key (RFC 8463) beside the RSA one and prints its\n" +
				"record to publish; --dkim-ed25519=false goes back to RSA alone (the key is kept for next time).",
			minArgs: 1, maxArgs: 1, setup: setupDomainUpdate},
		{name: "verify", args: "DOMAIN", summary: "check the domain's DNS records and mark it verified when they are published",
			minArgs: 1, maxArgs: 1, setup: setupDomainVerify},
		{name: "set-tracking", args: "DOMAIN HOST", summary: "set the tracking domain (a name under DOMAIN) and print its CNAME",
			minArgs: 2, maxArgs: 2, setup: setupSetHost("tracking")},
		{name: "set-auth", args: "DOMAIN HOST", summary: "set the authentication (return-path and DKIM d=) domain and print its records",
			minArgs: 2, maxArgs: 2, setup: setupSetHost("authentication")},
		{name: "track", args: "DOMAIN",
			summary: "turn open, click and unsubscribe tracking on or off", minArgs: 1, maxArgs: 1, setup: setupTrack},
		{name: "remove", args: "DOMAIN", summary: "delete a domain, its DKIM key, log, suppressions and webhooks",
			minArgs: 1, maxArgs: 1, setup: one(func(ctx context.Context, x *inv, a *app.App, d domain.Domain) error {
				if err := a.Domains.Remove(ctx, d); err != nil {
					return err
				}
				fmt.Fprintf(x.stdout, "removed %s\n", d.Name)
				return nil
			})},
	}}
}

// onDomain runs a command on the domain named by the first argument.
func onDomain(run func(ctx context.Context, x *inv, a *app.App, d domain.Domain) error) runFunc {
	return func(ctx context.Context, x *inv) error {
		a, d, err := x.domain(ctx, x.args[0])
		if err != nil {
			return err
		}
		return run(ctx, x, a, d)
	}
}

// deliveryFlags are the flags of add and update that say how mail leaves.
type deliveryFlags struct {
	direct                    *bool
	host, user, password, tls *string
	port                      *int
	pool                      *string // nil: --pool not given
}

func addDeliveryFlags(fs *flag.FlagSet) *deliveryFlags {
	f := &deliveryFlags{
		direct:   fs.Bool("direct", false, "deliver straight to the recipients' MX hosts"),
		host:     fs.String("smtp-host", "", "relay through this SMTP `host`"),
		port:     fs.Int("smtp-port", 0, "SMTP relay `port` (default 587)"),
		user:     fs.String("smtp-user", "", "SMTP relay `user`"),
		password: fs.String("smtp-password", "", "SMTP relay `password` (stored encrypted)"),
		tls:      choiceFlag(fs, "smtp-tls", "relay TLS (default starttls)", "none", "starttls", "tls"),
	}
	fs.Func("pool", "send direct deliveries through this egress `pool` of the --egress-file (\"\" for none)", func(v string) error {
		f.pool = &v
		return nil
	})
	return f
}

// apply returns del changed by the flags given; changed is false when no
// delivery flag was given.
func (f *deliveryFlags) apply(del domain.Delivery) (out domain.Delivery, changed bool, err error) {
	relay := *f.host != "" || *f.port != 0 || *f.user != "" || *f.password != "" || *f.tls != ""
	if f.pool != nil {
		del.Pool, changed = *f.pool, true
	}
	switch {
	case *f.direct && relay:
		return del, false, usagef("give either --direct or the --smtp-* flags, not both")
	case *f.direct:
		return domain.Delivery{Mode: domain.ModeDirect, Pool: del.Pool}, true, nil
	case !relay:
		return del, changed, nil
	}
	if del.Mode != domain.ModeSMTP {
		if *f.host == "" {
			return del, false, usagef("--smtp-host is required to switch to relay delivery")
		}
		del = domain.Delivery{Mode: domain.ModeSMTP}
	}
	if *f.host != "" {
		del.Host = *f.host
	}
	if *f.port != 0 {
		del.Port = *f.port
	}
	if *f.tls != "" {
		del.TLS = *f.tls
	}
	if *f.user != "" || *f.password != "" {
		del.User, del.Password = *f.user, *f.password
	}
	return del, true, nil
}

func setupDomainAdd(fs *flag.FlagSet) runFunc {
	df := addDeliveryFlags(fs)
	ed := fs.Bool("dkim-ed25519", false, "also make an Ed25519 key and sign with it beside the RSA key (RFC 8463)")
	return func(ctx context.Context, x *inv) error {
		x.fields = deliveryFields
		del, changed, err := df.apply(domain.Delivery{})
		if err != nil {
			return err
		}
		if !changed {
			return usagef("give --direct or --smtp-host HOST [--smtp-port PORT]")
		}
		a, err := x.app(ctx)
		if err != nil {
			return err
		}
		acc, err := a.Accounts.User(ctx, x.args[0])
		if err != nil {
			return err
		}
		d, err := a.Domains.Add(ctx, domain.AddParams{AccountID: acc.ID, Name: x.args[1], Delivery: del, Trusted: true, DKIMEd25519: *ed})
		if err != nil {
			return err
		}
		fmt.Fprintf(x.stdout, "added %s for %s; publish these records, then run `postline domain verify %s`:\n", d.Name, acc.Login, d.Name)
		return printRecords(x.stdout, a.Domains.Records(d))
	}
}

func setupDomainUpdate(fs *flag.FlagSet) runFunc {
	df := addDeliveryFlags(fs)
	inbound, ed := &optBool{}, &optBool{}
	fs.Var(inbound, "inbound", "receive mail at the domain's addresses (--inbound=false: stop)")
	fs.Var(ed, "dkim-ed25519", "add an Ed25519 DKIM signature beside the RSA one (--dkim-ed25519=false: RSA alone)")
	return onDomain(func(ctx context.Context, x *inv, a *app.App, d domain.Domain) error {
		x.fields = deliveryFields
		del, changed, err := df.apply(d.Delivery)
		if err != nil {
			return err
		}
		if !changed && !inbound.set && !ed.set {
			return usagef("nothing to change: give --direct, --smtp-*, --pool, --inbound or --dkim-ed25519 flags")
		}
		if changed {
			if d, err = a.Domains.SetDelivery(ctx, d, del, true); err != nil {
				return err
			}
			fmt.Fprintf(x.stdout, "%s now delivers %s\n", d.Name, deliveryText(d))
		}
		if inbound.set {
			if d, err = a.Domains.SetInbound(ctx, d, inbound.v); err != nil {
				return err
			}
			fmt.Fprintf(x.stdout, "%s %s\n", d.Name, inboundText(d, a.Domains.InboundMXHost()))
		}
		if ed.set {
			if d, err = a.Domains.SetDKIMEd25519(ctx, d, ed.v); err != nil {
				return err
			}
			return printEd25519(x.stdout, d, a.Domains.Records(d))
		}
		return nil
	})
}

// printEd25519 says how the domain signs now and, with Ed25519 on, the
// records of its key to publish.
func printEd25519(w io.Writer, d domain.Domain, recs []domain.Record) error {
	if !d.DKIMEd25519 {
		fmt.Fprintf(w, "%s signs with RSA only\n", d.Name)
		return nil
	}
	fmt.Fprintf(w, "%s signs with Ed25519 beside RSA; publish:\n", d.Name)
	var ed []domain.Record
	for _, r := range recs {
		if strings.HasSuffix(r.Purpose, "dkim_ed25519") {
			ed = append(ed, r)
		}
	}
	return printRecords(w, ed)
}

// optBool is a boolean flag that knows whether it was given.
type optBool struct{ set, v bool }

func (b *optBool) String() string {
	if b == nil || !b.set {
		return ""
	}
	return strconv.FormatBool(b.v)
}

func (b *optBool) Set(s string) error {
	v, err := strconv.ParseBool(s)
	if err != nil {
		return fmt.Errorf("want true or false")
	}
	b.set, b.v = true, v
	return nil
}

func (b *optBool) IsBoolFlag() bool { return true }

// inboundText says whether the domain receives, and the MX to publish.
func inboundText(d domain.Domain, mxHost string) string {
	var s string
	switch {
	case d.Receives():
		s = "receives mail (routes decide what becomes of it)"
	case d.Inbound:
		s = "receives mail once verified"
	default:
		return "receives no mail"
	}
	if mxHost == "" {
		return s + "; no MX host is set (--inbound-mx-host): publish an MX naming this server's inbound listener"
	}
	return s + "; publish: " + d.Name + ". MX 10 " + mxHost + "."
}

func setupDomainList(*flag.FlagSet) runFunc {
	return func(ctx context.Context, x *inv) error {
		a, err := x.app(ctx)
		if err != nil {
			return err
		}
		acc, err := a.Accounts.User(ctx, x.args[0])
		if err != nil {
			return err
		}
		list, err := a.Domains.List(ctx, acc.ID)
		if err != nil {
			return err
		}
		tw := tabwriter.NewWriter(x.stdout, 0, 4, 2, ' ', 0)
		fmt.Fprintln(tw, "DOMAIN\tVERIFIED\tDELIVERY\tTRACKING\tAUTH")
		for _, d := range list {
			fmt.Fprintf(tw, "%s\t%v\t%s\t%s\t%s\n", d.Name, d.Verified(), deliveryText(d), dash(d.TrackingDomain), dash(d.AuthDomain))
		}
		return tw.Flush()
	}
}

func domainShow(ctx context.Context, x *inv, a *app.App, d domain.Domain) error {
	verified := "no"
	if d.VerifiedAt != nil {
		verified = d.VerifiedAt.Format(time.RFC3339)
	}
	login, err := x.loginOf(ctx, d.AccountID)
	if err != nil {
		return err
	}
	claim := d.ClaimStatus()
	switch {
	case claim == domain.ClaimEnded:
		claim += " (" + d.ClaimEnded + ")"
	case claim == domain.ClaimPending && d.ClaimExpiresAt != nil:
		claim += ", deleted unless verified by " + d.ClaimExpiresAt.Format(time.RFC3339)
	}
	fmt.Fprintf(x.stdout, "domain:    %s\naccount:   %s\nclaim:     %s\nverified:  %s\ndns check: %s\ndelivery:  %s\ntracking:  %s (%s)\nauth:      %s\ninbound:   %s\nselector:  %s\ned25519:   %s\n\n",
		d.Name, login, claim, verified, checkText(d), deliveryText(d), dash(d.TrackingDomain), trackingText(d.Tracking), dash(d.AuthDomain),
		inboundText(d, a.Domains.InboundMXHost()), d.DKIMSelector, ed25519Text(d))
	return printRecords(x.stdout, a.Domains.CheckedRecords(d))
}

// ed25519Text says whether the domain adds an Ed25519 signature.
func ed25519Text(d domain.Domain) string {
	if d.DKIMEd25519 {
		return "on, selector " + d.DKIMEd25519Selector() + " (a second signature beside RSA)"
	}
	return "off"
}

func setupDomainVerify(fs *flag.FlagSet) runFunc {
	force := fs.Bool("force", false, "mark verified without DNS lookups (operator override)")
	return onDomain(func(ctx context.Context, x *inv, a *app.App, d domain.Domain) error {
		d, recs, err := a.Domains.Verify(ctx, d, *force)
		if err != nil {
			return err
		}
		if *force {
			fmt.Fprintf(x.stdout, "%s marked verified without DNS checks (--force)\n", d.Name)
			return nil
		}
		if err := printRecords(x.stdout, recs); err != nil {
			return err
		}
		switch {
		case d.RecordsChanged():
			// A failed check never unverifies: the domain keeps sending.
			return fmt.Errorf("%s stays verified and keeps sending, but its DNS records changed since verification: %s",
				d.Name, d.RecordsAdvice())
		case !d.Verified():
			return fmt.Errorf("%s is not verified: %s", d.Name, d.RecordsAdvice())
		}
		fmt.Fprintf(x.stdout, "%s is verified\n", d.Name)
		return nil
	})
}

func setupSetHost(what string) func(*flag.FlagSet) runFunc {
	return func(*flag.FlagSet) runFunc {
		return onDomain(func(ctx context.Context, x *inv, a *app.App, d domain.Domain) error {
			x.fields = deliveryFields
			set := a.Domains.SetTracking
			if what == "authentication" {
				set = a.Domains.SetAuth
			}
			d, err := set(ctx, d, x.args[1])
			if err != nil {
				return err
			}
			fmt.Fprintf(x.stdout, "%s domain of %s set; publish:\n", what, d.Name)
			return printRecords(x.stdout, a.Domains.Records(d))
		})
	}
}

func setupTrack(fs *flag.FlagSet) runFunc {
	opens := choiceFlag(fs, "opens", "the open pixel", "on", "off")
	clicks := choiceFlag(fs, "clicks", "click URLs", "on", "off")
	unsub := choiceFlag(fs, "unsubscribe", "List-Unsubscribe with one-click", "on", "off")
	return onDomain(func(ctx context.Context, x *inv, a *app.App, d domain.Domain) error {
		t := d.Tracking
		for _, f := range []struct {
			value string
			out   *bool
		}{{*opens, &t.Opens}, {*clicks, &t.Clicks}, {*unsub, &t.Unsubscribe}} {
			if f.value != "" {
				*f.out = f.value == "on"
			}
		}
		d, err := a.Domains.SetTrackingOptions(ctx, d, t)
		if err != nil {
			return err
		}
		fmt.Fprintf(x.stdout, "%s tracking: %s\n", d.Name, trackingText(d.Tracking))
		return nil
	})
}

// checkText is the domain's last DNS check (each record's state is in
// the STATUS column).
func checkText(d domain.Domain) string {
	c := d.DNSCheck
	switch {
	case c == nil:
		return "none yet"
	case c.OK:
		return c.At.Format(time.RFC3339) + ", every required record in place"
	case d.RecordsChanged():
		return c.At.Format(time.RFC3339) + ", failed (" + c.Outcome() + "): records changed since verification; the domain stays verified"
	}
	return c.At.Format(time.RFC3339) + ", failed (" + c.Outcome() + ")"
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

func deliveryText(dom domain.Domain) string {
	d := dom.Delivery
	if d.Mode == domain.ModeDirect && d.Pool != "" {
		return "direct to MX through egress pool " + d.Pool
	}
	if pool := dom.EgressPool(); pool != "" {
		return "direct to MX through egress pool " + pool + " (the account's)"
	}
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

// printRecords prints the records as a table, then what a value needs
// said about it: a long TXT value as quoted strings, a note.
func printRecords(w io.Writer, recs []domain.Record) error {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "PURPOSE\tTYPE\tNAME\tVALUE\tREQUIRED\tSTATUS")
	for _, r := range recs {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%v\t%s\n", r.Purpose, r.Type, r.Name, dash(r.Value), r.Required, dash(r.Status))
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	for _, r := range recs {
		if r.ValueSplit != "" {
			fmt.Fprintf(w, "\n%s value as quoted strings of at most 255 characters (zone files, some DNS providers):\n  %s\n", r.Purpose, r.ValueSplit)
		}
		if r.Note != "" {
			fmt.Fprintf(w, "\n%s: %s\n", r.Purpose, r.Note)
		}
	}
	return nil
}
