package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"strconv"
	"text/tabwriter"
	"time"

	"github.com/postline/postline/internal/app"
	"github.com/postline/postline/internal/domain"
	"github.com/postline/postline/internal/suppression"
)

func suppressionCommands() *cmd {
	return &cmd{name: "suppression", summary: "a domain's bounce, unsubscribe and whitelist lists", subs: []*cmd{
		{name: "add", args: "DOMAIN RECIPIENT --type bounce|unsubscribe|whitelist",
			summary: "add an address or a whole domain to one of DOMAIN's lists", minArgs: 2, maxArgs: 2, setup: setupSuppressionAdd},
		{name: "remove", args: "DOMAIN ID", summary: "remove an entry by the id `suppression list` shows",
			minArgs: 2, maxArgs: 2, setup: setupSuppressionRemove},
		{name: "list", args: "DOMAIN", summary: "list one of DOMAIN's lists, newest first", minArgs: 1, maxArgs: 1,
			setup: setupSuppressionList},
		{name: "import", args: "DOMAIN FILE", summary: "import a CSV of recipient,type rows (type defaults to bounce; FILE - is stdin)",
			minArgs: 2, maxArgs: 2, setup: setupSuppressionImport},
	}}
}

var suppressionTypes = []string{string(suppression.Bounce), string(suppression.Unsubscribe), string(suppression.Whitelist)}

func setupSuppressionAdd(fs *flag.FlagSet) runFunc {
	typ := choiceFlag(fs, "type", "the list (required)", suppressionTypes...)
	desc := fs.String("description", "", "a note kept with the entry")
	return onDomain(func(ctx context.Context, x *inv, a *app.App, d domain.Domain) error {
		x.fields = map[string]string{"recipient": "RECIPIENT", "type": "--type", "description": "--description"}
		if *typ == "" {
			return usagef("--type is required: want %s", orList(suppressionTypes))
		}
		entry, created, err := a.Suppressions.Add(ctx, suppression.AddParams{DomainID: d.ID, Type: suppression.Type(*typ),
			Recipient: x.args[1], Description: *desc, Source: "cli"})
		if err != nil {
			return err
		}
		verb := "added"
		if !created {
			verb = "already present:"
		}
		fmt.Fprintf(x.stdout, "%s %s %s (id %d)\n", verb, entry.Type, entry.Recipient, entry.ID)
		return nil
	})
}

func setupSuppressionRemove(*flag.FlagSet) runFunc {
	return func(ctx context.Context, x *inv) error {
		id, err := strconv.ParseInt(x.args[1], 10, 64)
		if err != nil {
			return usagef("ID must be a number (see `postline suppression list DOMAIN`), got %q", x.args[1])
		}
		a, d, err := x.domain(ctx, x.args[0])
		if err != nil {
			return err
		}
		if err := a.Suppressions.Remove(ctx, d.ID, id); err != nil {
			return err
		}
		fmt.Fprintf(x.stdout, "removed suppression %d\n", id)
		return nil
	}
}

func setupSuppressionImport(*flag.FlagSet) runFunc {
	return onDomain(func(ctx context.Context, x *inv, a *app.App, d domain.Domain) error {
		var r io.Reader = x.stdin
		if x.args[1] != "-" {
			f, err := os.Open(x.args[1])
			if err != nil {
				return err
			}
			defer f.Close()
			r = f
		}
		res, err := a.Suppressions.Import(ctx, d.ID, r, "import")
		fmt.Fprintf(x.stdout, "imported: %d added, %d already present\n", res.Added, res.Existing)
		return err
	})
}

func setupSuppressionList(fs *flag.FlagSet) runFunc {
	typ := choiceFlag(fs, "type", "the list (default unsubscribe)", suppressionTypes...)
	search := fs.String("search", "", "only recipients containing this `text`")
	page := fs.Int("page", 1, "page number")
	perPage := fs.Int("per-page", 50, "entries per page, 10 to 100")
	return func(ctx context.Context, x *inv) error {
		if *page < 1 {
			return usagef("--page must be at least 1, got %d", *page)
		}
		if *perPage < suppression.MinPerPage || *perPage > suppression.MaxPerPage {
			return usagef("--per-page must be %d to %d, got %d", suppression.MinPerPage, suppression.MaxPerPage, *perPage)
		}
		t := suppression.Unsubscribe
		if *typ != "" {
			t = suppression.Type(*typ)
		}
		x.fields = map[string]string{"search": "--search"}
		a, d, err := x.domain(ctx, x.args[0])
		if err != nil {
			return err
		}
		pg, err := a.Suppressions.List(ctx, d.ID, t, *search, *page, *perPage)
		if err != nil {
			return err
		}
		tw := tabwriter.NewWriter(x.stdout, 0, 4, 2, ' ', 0)
		fmt.Fprintln(tw, "ID\tTYPE\tRECIPIENT\tSOURCE\tCREATED")
		for _, en := range pg.Entries {
			fmt.Fprintf(tw, "%d\t%s\t%s\t%s\t%s\n", en.ID, en.Type, en.Recipient, deref(en.Source), en.CreatedAt.Format(time.RFC3339))
		}
		fmt.Fprintf(tw, "page %d of %d, %d in all\n", pg.Page, pg.LastPage, pg.Total)
		return tw.Flush()
	}
}

func deref(s *string) string {
	if s == nil {
		return "-"
	}
	return *s
}
