package main

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"text/tabwriter"
)

var webhookArgs = map[string]int{"add": 2, "list": 1, "remove": 2}

// cmdWebhook manages a domain's webhooks from the operator's shell, as the
// API does for the owner.
func cmdWebhook(ctx context.Context, e env, args []string) error {
	if len(args) == 0 {
		return usagef("want webhook add|list|remove")
	}
	sub := args[0]
	n, ok := webhookArgs[sub]
	if !ok {
		return usagef("unknown subcommand %q: want add, list or remove", sub)
	}
	fs, l := flags(e, "webhook "+sub)
	types := fs.String("events", "", "add: comma-separated event types (default all)")
	pos, cfg, err := parse(fs, l, args[1:])
	if err != nil {
		return err
	}
	if len(pos) != n {
		return usagef("webhook %s takes %d argument(s), got %d", sub, n, len(pos))
	}
	a, d, err := openDomain(ctx, e, cfg, pos[0])
	if err != nil {
		return err
	}
	defer a.Close()
	switch sub {
	case "add":
		var ts []string
		if *types != "" {
			ts = strings.Split(*types, ",")
		}
		w, err := a.Webhooks.Create(ctx, d.ID, pos[1], ts)
		if err != nil {
			return err
		}
		fmt.Fprintf(e.stdout, "added webhook %d for %s; its signing secret (shown only now):\n%s\n", w.ID, d.Name, w.Secret)
	case "list":
		list, err := a.Webhooks.List(ctx, d.ID)
		if err != nil {
			return err
		}
		tw := tabwriter.NewWriter(e.stdout, 0, 4, 2, ' ', 0)
		fmt.Fprintln(tw, "ID\tURL\tEVENTS\tLAST EVENT\tFAILURES\tLAST ERROR")
		for _, w := range list {
			events := "all"
			if len(w.EventTypes) > 0 {
				names := make([]string, len(w.EventTypes))
				for i, t := range w.EventTypes {
					names[i] = string(t)
				}
				events = strings.Join(names, ",")
			}
			fmt.Fprintf(tw, "%d\t%s\t%s\t%d\t%d\t%s\n", w.ID, w.URL, events, w.Cursor, w.Attempts, dash(w.LastError))
		}
		return tw.Flush()
	case "remove":
		id, err := strconv.ParseInt(pos[1], 10, 64)
		if err != nil {
			return usagef("ID must be a number (see `postline webhook list`), got %q", pos[1])
		}
		if err := a.Webhooks.Delete(ctx, d.ID, id); err != nil {
			return err
		}
		fmt.Fprintf(e.stdout, "removed webhook %d\n", id)
	}
	return nil
}
