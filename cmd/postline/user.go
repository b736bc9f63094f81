package main

import (
	"context"
	"fmt"
	"strconv"
	"text/tabwriter"
	"time"
)

func cmdUser(ctx context.Context, e env, args []string) error {
	if len(args) == 0 {
		return usagef("want user create|list|disable")
	}
	fs, l := flags(e, "user "+args[0])
	pos, cfg, err := parse(fs, l, args[1:])
	if err != nil {
		return err
	}
	want := map[string]int{"create": 1, "list": 0, "disable": 1}
	n, ok := want[args[0]]
	if !ok {
		return usagef("unknown subcommand %q: want create, list or disable", args[0])
	}
	if len(pos) != n {
		return usagef("user %s takes %d argument(s), got %d", args[0], n, len(pos))
	}
	a, err := openApp(ctx, e, cfg)
	if err != nil {
		return err
	}
	defer a.Close()
	switch args[0] {
	case "create":
		acc, err := a.Accounts.CreateUser(ctx, pos[0])
		if err != nil {
			return err
		}
		fmt.Fprintf(e.stdout, "created account %s (id %d)\n", acc.Login, acc.ID)
	case "disable":
		if err := a.Accounts.DisableUser(ctx, pos[0]); err != nil {
			return err
		}
		fmt.Fprintf(e.stdout, "disabled account %s\n", pos[0])
	default:
		users, err := a.Accounts.Users(ctx)
		if err != nil {
			return err
		}
		tw := tabwriter.NewWriter(e.stdout, 0, 4, 2, ' ', 0)
		fmt.Fprintln(tw, "ID\tLOGIN\tCREATED\tSTATUS")
		for _, u := range users {
			status := "active"
			if u.DisabledAt != nil {
				status = "disabled"
			}
			fmt.Fprintf(tw, "%d\t%s\t%s\t%s\n", u.ID, u.Login, u.CreatedAt.Format(time.RFC3339), status)
		}
		return tw.Flush()
	}
	return nil
}

func cmdKey(ctx context.Context, e env, args []string) error {
	if len(args) == 0 {
		return usagef("want key create|list|revoke")
	}
	fs, l := flags(e, "key "+args[0])
	name := fs.String("name", "", "a label for the key (create)")
	pos, cfg, err := parse(fs, l, args[1:])
	if err != nil {
		return err
	}
	switch args[0] {
	case "create", "list", "revoke":
	default:
		return usagef("unknown subcommand %q: want create, list or revoke", args[0])
	}
	if len(pos) != 1 {
		return usagef("key %s takes one argument", args[0])
	}
	var id int64
	if args[0] == "revoke" {
		if id, err = strconv.ParseInt(pos[0], 10, 64); err != nil {
			return usagef("KEY_ID must be a number (see `postline key list LOGIN`), got %q", pos[0])
		}
	}
	a, err := openApp(ctx, e, cfg)
	if err != nil {
		return err
	}
	defer a.Close()
	switch args[0] {
	case "create":
		key, _, err := a.Accounts.CreateKey(ctx, pos[0], *name)
		if err != nil {
			return err
		}
		fmt.Fprintln(e.stdout, key) // alone on its line, for scripts
	case "revoke":
		if err := a.Accounts.RevokeKey(ctx, id); err != nil {
			return err
		}
		fmt.Fprintf(e.stdout, "revoked key %d\n", id)
	default:
		keys, err := a.Accounts.Keys(ctx, pos[0])
		if err != nil {
			return err
		}
		tw := tabwriter.NewWriter(e.stdout, 0, 4, 2, ' ', 0)
		fmt.Fprintln(tw, "ID\tNAME\tPREFIX\tCREATED\tLAST USED\tSTATUS")
		for _, k := range keys {
			used, status := "never", "active"
			if k.LastUsedAt != nil {
				used = k.LastUsedAt.Format(time.RFC3339)
			}
			if k.RevokedAt != nil {
				status = "revoked"
			}
			fmt.Fprintf(tw, "%d\t%s\t%s…\t%s\t%s\t%s\n", k.ID, k.Name, k.Prefix, k.CreatedAt.Format(time.RFC3339), used, status)
		}
		return tw.Flush()
	}
	return nil
}
