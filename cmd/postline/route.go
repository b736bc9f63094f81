package main

import (
	"context"
	"flag"
	"fmt"
	"strings"
	"text/tabwriter"

	"github.com/postline/postline/internal/inboundroute"
)

func routeCommands() *cmd {
	return &cmd{name: "route", summary: "an account's inbound routes (Mailgun's Routes): what happens to mail received for its domains", subs: []*cmd{
		{name: "add", args: "LOGIN", summary: "add a route: --expression and --action (repeat it for several), --priority, --description",
			help: "The expression joins match_recipient(\"REGEX\"), match_header(\"HEADER\", \"REGEX\") or catch_all() with \"and\";\n" +
				"the actions are forward(\"URL or address\"), store(), store(notify=\"URL\") and stop(). See the README's \"Receiving mail\".",
			minArgs: 1, maxArgs: 1, setup: setupRouteAdd},
		{name: "list", args: "LOGIN", summary: "list LOGIN's routes in evaluation order (priority, then creation)",
			minArgs: 1, maxArgs: 1, setup: setupRouteList},
		{name: "show", args: "ID", summary: "print a route by the id `route list` shows", minArgs: 1, maxArgs: 1, setup: setupRouteShow},
		{name: "remove", args: "ID", summary: "delete a route by the id `route list` shows", minArgs: 1, maxArgs: 1, setup: setupRouteRemove},
	}}
}

// repeated is a flag that may be given several times, in order.
type repeated []string

func (r *repeated) String() string { return strings.Join(*r, " ") }

func (r *repeated) Set(v string) error {
	*r = append(*r, v)
	return nil
}

func setupRouteAdd(fs *flag.FlagSet) runFunc {
	expression := fs.String("expression", "", "which received messages the route takes, e.g. 'match_recipient(\".*@example.org\")'")
	var actions repeated
	fs.Var(&actions, "action", "an `ACTION` to take, e.g. 'forward(\"https://app.example/in\")' or 'stop()' (repeat for several, in order)")
	priority := fs.Int("priority", 0, "lower is evaluated first")
	description := fs.String("description", "", "what the route is for")
	format := fs.String("format", inboundroute.FormatMailgun, "what its URL forwards and notifications post: mailgun, json (Postmark's) or raw")
	return func(ctx context.Context, x *inv) error {
		x.fields = map[string]string{"expression": "--expression", "actions": "--action", "priority": "--priority", "description": "--description",
			"format": "--format"}
		for i, a := range actions {
			x.fields[fmt.Sprintf("actions[%d]", i)] = fmt.Sprintf("--action %q", a)
		}
		a, err := x.app(ctx)
		if err != nil {
			return err
		}
		acc, err := a.Accounts.User(ctx, x.args[0])
		if err != nil {
			return err
		}
		d, err := a.Routes.Create(ctx, acc.ID, inboundroute.Change{Expression: expression, Actions: []string(actions),
			Priority: priority, Description: description, Format: format})
		if err != nil {
			return err
		}
		fmt.Fprintf(x.stdout, "added route %s for %s (priority %d)\n", d.ID, acc.Login, d.Priority)
		return nil
	}
}

func setupRouteList(*flag.FlagSet) runFunc {
	return func(ctx context.Context, x *inv) error {
		a, err := x.app(ctx)
		if err != nil {
			return err
		}
		acc, err := a.Accounts.User(ctx, x.args[0])
		if err != nil {
			return err
		}
		list, _, err := a.Routes.List(ctx, acc.ID, 0, inboundroute.MaxPerAccount)
		if err != nil {
			return err
		}
		if len(list) == 0 {
			fmt.Fprintf(x.stdout, "%s has no routes\n", acc.Login)
			return nil
		}
		tw := tabwriter.NewWriter(x.stdout, 0, 4, 2, ' ', 0)
		fmt.Fprintln(tw, "ID\tPRIORITY\tEXPRESSION\tACTIONS\tDESCRIPTION")
		for _, d := range list {
			fmt.Fprintf(tw, "%s\t%d\t%s\t%s\t%s\n", d.ID, d.Priority, d.Expression, strings.Join(d.Actions, " | "), dash(d.Description))
		}
		return tw.Flush()
	}
}

func setupRouteShow(*flag.FlagSet) runFunc {
	return func(ctx context.Context, x *inv) error {
		a, err := x.app(ctx)
		if err != nil {
			return err
		}
		d, err := a.Routes.ByID(ctx, x.args[0])
		if err != nil {
			return err
		}
		login, err := x.loginOf(ctx, d.AccountID)
		if err != nil {
			return err
		}
		fmt.Fprintf(x.stdout, "route %s of %s\npriority     %d\ndescription  %s\nexpression   %s\n", d.ID, login, d.Priority, dash(d.Description), d.Expression)
		for _, act := range d.Actions {
			fmt.Fprintf(x.stdout, "action       %s\n", act)
		}
		fmt.Fprintf(x.stdout, "format       %s\n", d.Format)
		fmt.Fprintf(x.stdout, "created      %s\n", d.CreatedAt.Format("2006-01-02 15:04:05 UTC"))
		return nil
	}
}

func setupRouteRemove(*flag.FlagSet) runFunc {
	return func(ctx context.Context, x *inv) error {
		a, err := x.app(ctx)
		if err != nil {
			return err
		}
		d, err := a.Routes.ByID(ctx, x.args[0])
		if err != nil {
			return err
		}
		if err := a.Routes.Delete(ctx, d.AccountID, d.ID); err != nil {
			return err
		}
		fmt.Fprintf(x.stdout, "removed route %s\n", d.ID)
		return nil
	}
}
