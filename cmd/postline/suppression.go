package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"strconv"
	"text/tabwriter"
	"time"

	"github.com/postline/postline/internal/suppression"
)

var suppressionArgs = map[string]int{"add": 2, "remove": 2, "list": 1, "import": 2}

// cmdSuppression lets support staff fix lists by hand: add or remove an
// entry, list a domain's entries, import a CSV of recipient,type rows.
func cmdSuppression(ctx context.Context, e env, args []string) error {
	if len(args) == 0 {
		return usagef("want suppression add|remove|list|import")
	}
	sub := args[0]
	n, ok := suppressionArgs[sub]
	if !ok {
		return usagef("unknown subcommand %q: want add, remove, list or import", sub)
	}
	fs, l := flags(e, "suppression "+sub)
	typ := fs.String("type", "", "add, list: bounce, unsubscribe or whitelist (list default: unsubscribe)")
	desc := fs.String("description", "", "add: a note kept with the entry")
	search := fs.String("search", "", "list: recipient substring")
	page := fs.Int("page", 1, "list: page number")
	perPage := fs.Int("per-page", 50, "list: entries per page (10 to 100)")
	pos, cfg, err := parse(fs, l, args[1:])
	if err != nil {
		return err
	}
	if len(pos) != n {
		return usagef("suppression %s takes %d argument(s), got %d", sub, n, len(pos))
	}
	if sub == "add" && *typ == "" {
		return usagef("add needs --type bounce|unsubscribe|whitelist")
	}
	if *page < 1 || *perPage < suppression.MinPerPage || *perPage > suppression.MaxPerPage {
		return usagef("--page must be at least 1 and --per-page 10 to 100")
	}
	a, d, err := openDomain(ctx, e, cfg, pos[0])
	if err != nil {
		return err
	}
	defer a.Close()
	svc := a.Suppressions
	switch sub {
	case "add":
		entry, created, err := svc.Add(ctx, suppression.AddParams{DomainID: d.ID, Type: suppression.Type(*typ),
			Recipient: pos[1], Description: *desc, Source: "cli"})
		if err != nil {
			return err
		}
		verb := "added"
		if !created {
			verb = "already present:"
		}
		fmt.Fprintf(e.stdout, "%s %s %s (id %d)\n", verb, entry.Type, entry.Recipient, entry.ID)
	case "remove":
		id, err := strconv.ParseInt(pos[1], 10, 64)
		if err != nil {
			return usagef("ID must be a number (see `postline suppression list`), got %q", pos[1])
		}
		if err := svc.Remove(ctx, d.ID, id); err != nil {
			return err
		}
		fmt.Fprintf(e.stdout, "removed suppression %d\n", id)
	case "import":
		var r io.Reader = e.stdin
		if pos[1] != "-" {
			f, err := os.Open(pos[1])
			if err != nil {
				return err
			}
			defer f.Close()
			r = f
		}
		res, err := svc.Import(ctx, d.ID, r, "import")
		fmt.Fprintf(e.stdout, "imported: %d added, %d already present\n", res.Added, res.Existing)
		return err
	default:
		t := suppression.Unsubscribe
		if *typ != "" {
			t = suppression.Type(*typ)
		}
		if !t.Valid() {
			return usagef("--type must be bounce, unsubscribe or whitelist")
		}
		pg, err := svc.List(ctx, d.ID, t, *search, *page, *perPage)
		if err != nil {
			return err
		}
		tw := tabwriter.NewWriter(e.stdout, 0, 4, 2, ' ', 0)
		fmt.Fprintln(tw, "ID\tTYPE\tRECIPIENT\tSOURCE\tCREATED")
		for _, en := range pg.Entries {
			fmt.Fprintf(tw, "%d\t%s\t%s\t%s\t%s\n", en.ID, en.Type, en.Recipient, deref(en.Source), en.CreatedAt.Format(time.RFC3339))
		}
		fmt.Fprintf(tw, "page %d of %d, %d in all\n", pg.Page, pg.LastPage, pg.Total)
		return tw.Flush()
	}
	return nil
}

func deref(s *string) string {
	if s == nil {
		return "-"
	}
	return *s
}
