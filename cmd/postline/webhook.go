package main

import (
	"context"
	"flag"
	"fmt"
	"strconv"
	"strings"
	"text/tabwriter"

	"github.com/postline/postline/internal/app"
	"github.com/postline/postline/internal/domain"
	"github.com/postline/postline/internal/webhook"
)

func webhookCommands() *cmd {
	return &cmd{name: "webhook", summary: "a domain's webhooks (signed posts of its log entries)", subs: []*cmd{
		{name: "add", args: "DOMAIN URL", summary: "add a webhook and print its signing secret (shown only now)",
			minArgs: 2, maxArgs: 2, setup: setupWebhookAdd},
		{name: "list", args: "DOMAIN", summary: "list DOMAIN's webhooks with their cursor and last error",
			minArgs: 1, maxArgs: 1, setup: setupWebhookList},
		{name: "remove", args: "DOMAIN ID", summary: "remove a webhook by the id `webhook list` shows",
			minArgs: 2, maxArgs: 2, setup: setupWebhookRemove},
		{name: "signing-key", args: "LOGIN", summary: "print the account's webhook signing key (Mailgun-format posts), alone on one line",
			help: "The key signs every Mailgun-format webhook post of the account's domains (Mailgun's \"HTTP webhook signing key\"). " +
				"--rotate makes a new one: posts are signed with it from then on, so give it to the receivers first.",
			minArgs: 1, maxArgs: 1, setup: setupWebhookSigningKey},
	}}
}

func setupWebhookAdd(fs *flag.FlagSet) runFunc {
	types := fs.String("events", "", "comma-separated event `types` to post (default all)")
	return onDomain(func(ctx context.Context, x *inv, a *app.App, d domain.Domain) error {
		x.fields = map[string]string{"url": "URL", "event_types": "--events"}
		var ts []string
		if *types != "" {
			ts = strings.Split(*types, ",")
		}
		w, err := a.Webhooks.Create(ctx, d.ID, x.args[1], ts)
		if err != nil {
			return err
		}
		fmt.Fprintf(x.stdout, "added webhook %d for %s; its signing secret (shown only now):\n%s\n", w.ID, d.Name, w.Secret)
		return nil
	})
}

func setupWebhookList(*flag.FlagSet) runFunc {
	return onDomain(func(ctx context.Context, x *inv, a *app.App, d domain.Domain) error {
		list, err := a.Webhooks.List(ctx, d.ID)
		if err != nil {
			return err
		}
		tw := tabwriter.NewWriter(x.stdout, 0, 4, 2, ' ', 0)
		fmt.Fprintln(tw, "ID\tFORMAT\tURL\tEVENTS\tLAST EVENT\tFAILURES\tLAST ERROR")
		for _, w := range list {
			events := "all"
			if w.Format == webhook.FormatMailgun {
				events = w.MailgunEvent
			}
			if len(w.EventTypes) > 0 {
				names := make([]string, len(w.EventTypes))
				for i, t := range w.EventTypes {
					names[i] = string(t)
				}
				events = strings.Join(names, ",")
			}
			fmt.Fprintf(tw, "%d\t%s\t%s\t%s\t%d\t%d\t%s\n", w.ID, w.Format, w.URL, events, w.Cursor, w.Attempts, dash(w.LastError))
		}
		return tw.Flush()
	})
}

func setupWebhookRemove(*flag.FlagSet) runFunc {
	return func(ctx context.Context, x *inv) error {
		id, err := strconv.ParseInt(x.args[1], 10, 64)
		if err != nil {
			return usagef("ID must be a number (see `postline webhook list DOMAIN`), got %q", x.args[1])
		}
		a, d, err := x.domain(ctx, x.args[0])
		if err != nil {
			return err
		}
		if err := a.Webhooks.Delete(ctx, d.ID, id); err != nil {
			return err
		}
		fmt.Fprintf(x.stdout, "removed webhook %d\n", id)
		return nil
	}
}

func setupWebhookSigningKey(fs *flag.FlagSet) runFunc {
	rotate := fs.Bool("rotate", false, "make a new key (the old one stops signing at once)")
	return func(ctx context.Context, x *inv) error {
		a, err := x.app(ctx)
		if err != nil {
			return err
		}
		acc, err := a.Accounts.User(ctx, x.args[0])
		if err != nil {
			return err
		}
		get := a.Webhooks.SigningKey
		if *rotate {
			get = a.Webhooks.RotateSigningKey
		}
		key, err := get(ctx, acc.ID)
		if err != nil {
			return err
		}
		fmt.Fprintln(x.stdout, key)
		return nil
	}
}
