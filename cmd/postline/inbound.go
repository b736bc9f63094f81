package main

import (
	"context"
	"flag"
	"fmt"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/postline/postline/internal/app"
	"github.com/postline/postline/internal/domain"
	"github.com/postline/postline/internal/receiving"
)

func inboundCommands() *cmd {
	return &cmd{name: "inbound", summary: "mail received for a domain that a route stored", subs: []*cmd{
		{name: "list", args: "DOMAIN", summary: "list the domain's stored messages, newest first (--recipient, --sender, --subject, --limit, --offset)",
			minArgs: 1, maxArgs: 1, setup: setupInboundList},
		{name: "show", args: "DOMAIN ID", summary: "print a stored message: its facts and authentication results, its text and attachments; --raw prints it as received",
			minArgs: 2, maxArgs: 2, setup: setupInboundShow},
	}}
}

func setupInboundList(fs *flag.FlagSet) runFunc {
	recipient := fs.String("recipient", "", "only messages to this `address` (any case)")
	sender := fs.String("sender", "", "only messages from this envelope sender `address` (any case)")
	subject := fs.String("subject", "", "only messages whose subject contains `TEXT` (any case)")
	limit := fs.Int("limit", 50, "at most `N` messages (1 to 1000)")
	offset := fs.Int("offset", 0, "skip the `N` newest")
	return onDomain(func(ctx context.Context, x *inv, a *app.App, d domain.Domain) error {
		if *limit < 1 || *limit > 1000 {
			return usagef("--limit: want 1 to 1000, got %d", *limit)
		}
		if *offset < 0 {
			return usagef("--offset: want 0 or more, got %d", *offset)
		}
		list, total, err := a.Receiving.List(ctx, receiving.Filter{DomainID: d.ID, Recipient: *recipient, Sender: *sender,
			Subject: *subject, Limit: *limit, Offset: *offset})
		if err != nil {
			return err
		}
		if total == 0 {
			fmt.Fprintf(x.stdout, "%s has no stored messages%s\n", d.Name, receivingNote(d))
			return nil
		}
		tw := tabwriter.NewWriter(x.stdout, 0, 4, 2, ' ', 0)
		fmt.Fprintln(tw, "ID\tRECEIVED\tRECIPIENT\tFROM\tSUBJECT\tSIZE")
		for _, m := range list {
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%d\n", m.ID, m.ReceivedAt.Format(time.RFC3339), m.Recipient, oneLine(m.From, 40),
				oneLine(m.Subject, 60), m.Size)
		}
		if err := tw.Flush(); err != nil {
			return err
		}
		if *offset+len(list) < total {
			fmt.Fprintf(x.stdout, "%d of %d shown; --offset %d for more\n", len(list), total, *offset+len(list))
		}
		return nil
	})
}

// receivingNote says why a domain that does not receive has nothing.
func receivingNote(d domain.Domain) string {
	switch {
	case d.Receives():
		return ""
	case d.Inbound:
		return " (inbound is on; it receives once verified)"
	}
	return " (inbound is off: postline domain update " + d.Name + " --inbound)"
}

func oneLine(s string, n int) string {
	s = strings.Join(strings.Fields(s), " ")
	if r := []rune(s); len(r) > n {
		return string(r[:n-1]) + "…"
	}
	return s
}

func setupInboundShow(fs *flag.FlagSet) runFunc {
	raw := fs.Bool("raw", false, "print the message as received (this server's Authentication-Results and Received fields on top)")
	return onDomain(func(ctx context.Context, x *inv, a *app.App, d domain.Domain) error {
		m, err := a.Receiving.Get(ctx, d.ID, x.args[1])
		if err != nil {
			return err
		}
		if *raw {
			_, err := x.stdout.Write(m.Raw)
			return err
		}
		p := receiving.Parse(m.Raw)
		sender := m.Sender
		if sender == "" {
			sender = "<> (null sender)"
		}
		fmt.Fprintf(x.stdout, "message:    %s\nreceived:   %s\nrecipient:  %s\nsender:     %s\nfrom:       %s\nsubject:    %s\nmessage-id: %s\nsize:       %d bytes\nroutes:     %s\n",
			m.ID, m.ReceivedAt.Format(time.RFC3339), m.Recipient, sender, m.From, m.Subject, m.MessageID, m.Size, strings.Join(m.Routes, ", "))
		fmt.Fprintf(x.stdout, "spf:        %s\n", authText(m.Auth.SPF.Result, m.Auth.SPF.Domain, "", m.Auth.SPF.Reason))
		for _, k := range m.Auth.DKIM {
			fmt.Fprintf(x.stdout, "dkim:       %s\n", authText(k.Result, k.Domain, "", k.Reason))
		}
		if len(m.Auth.DKIM) == 0 {
			fmt.Fprintln(x.stdout, "dkim:       none (not signed)")
		}
		fmt.Fprintf(x.stdout, "dmarc:      %s\n", authText(m.Auth.DMARC.Result, m.Auth.DMARC.Domain, m.Auth.DMARC.Policy, m.Auth.DMARC.Reason))
		for _, at := range p.Attachments {
			fmt.Fprintf(x.stdout, "attachment: %d %s (%s, %d bytes)\n", at.Index, strconv.Quote(at.Filename), at.ContentType, at.Size)
		}
		switch {
		case p.BodyPlain != "":
			fmt.Fprintf(x.stdout, "\n%s\n", strings.TrimRight(p.BodyPlain, "\r\n"))
		case p.BodyHTML != "":
			fmt.Fprintln(x.stdout, "\n(HTML only: --raw prints it)")
		}
		return nil
	})
}

func authText(result, dom, policy, reason string) string {
	s := result
	if dom != "" {
		s += " " + dom
	}
	if policy != "" {
		s += " (policy " + policy + ")"
	}
	if reason != "" {
		s += ": " + reason
	}
	return s
}
