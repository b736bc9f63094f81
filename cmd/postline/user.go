package main

import (
	"bufio"
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"golang.org/x/term"

	"github.com/postline/postline/internal/account"
)

func userCommands() *cmd {
	// withLogin makes a flagless command of one that takes LOGIN.
	withLogin := func(run func(ctx context.Context, x *inv, login string) error) func(*flag.FlagSet) runFunc {
		return func(*flag.FlagSet) runFunc {
			return func(ctx context.Context, x *inv) error { return run(ctx, x, x.args[0]) }
		}
	}
	return &cmd{name: "user", summary: "accounts", subs: []*cmd{
		{name: "create", args: "LOGIN", summary: "create an account (then give it a key with `postline key create LOGIN`)",
			minArgs: 1, maxArgs: 1, setup: setupUserCreate},
		{name: "password", args: "LOGIN", summary: "set LOGIN's console password (asked twice on a terminal, else read from stdin)",
			help:    "An empty password removes it: the account then signs in to the console with an API key only.",
			minArgs: 1, maxArgs: 1, setup: setupUserPassword},
		{name: "list", summary: "list accounts", setup: setupUserList},
		{name: "add-member", args: "ACCOUNT EMAIL", summary: "invite EMAIL to ACCOUNT's console (--role owner|developer|viewer) and print its one-time link",
			help: "The link (--public-url + /join/TOKEN) works once, for 24 hours: the member sets a password there and then signs in\n" +
				"with EMAIL and it. Owners do everything; developers everything but members and the audit log; viewers\n" +
				"read only. Inviting a pending member again prints a new link (the old one stops working). An account has at\n" +
				"most --members-per-account members and --member-invites-per-account pending invitations.",
			minArgs: 2, maxArgs: 2, setup: setupUserAddMember},
		{name: "members", args: "ACCOUNT", summary: "list ACCOUNT's console members: email, role, state, last sign-in",
			minArgs: 1, maxArgs: 1, setup: setupUserMembers},
		{name: "remove-member", args: "ACCOUNT EMAIL", summary: "remove a console member: its sessions end at once (invite it again to reset its password)",
			minArgs: 2, maxArgs: 2, setup: setupUserRemoveMember},
		{name: "update", args: "LOGIN", summary: "change an account's settings: --pool, its domains' default egress pool",
			help: "--pool NAME names a pool of the --egress-file: the account's domains that name no pool of their own\n" +
				"send direct deliveries through it (a domain's own pool, `postline domain update --pool`, wins);\n" +
				"--pool \"\" clears it.",
			minArgs: 1, maxArgs: 1, setup: setupUserUpdate},
		{name: "disable", args: "LOGIN", summary: "disable an account: its keys stop working at once",
			minArgs: 1, maxArgs: 1, setup: withLogin(func(ctx context.Context, x *inv, login string) error {
				a, err := x.app(ctx)
				if err != nil {
					return err
				}
				if err := a.Accounts.DisableUser(ctx, login); err != nil {
					return err
				}
				fmt.Fprintf(x.stdout, "disabled account %s\n", login)
				return nil
			})},
		{name: "enable", args: "LOGIN", summary: "enable a disabled account: its keys that were not revoked work again",
			minArgs: 1, maxArgs: 1, setup: withLogin(func(ctx context.Context, x *inv, login string) error {
				a, err := x.app(ctx)
				if err != nil {
					return err
				}
				if err := a.Accounts.EnableUser(ctx, login); err != nil {
					return err
				}
				fmt.Fprintf(x.stdout, "enabled account %s\n", login)
				return nil
			})},
	}}
}

func setupUserCreate(fs *flag.FlagSet) runFunc {
	admin := fs.Bool("admin", false, "an operator: sees every account and the queue in the console and /api/admin/")
	return func(ctx context.Context, x *inv) error { return userCreate(ctx, x, x.args[0], *admin) }
}

func userCreate(ctx context.Context, x *inv, login string, admin bool) error {
	x.fields = map[string]string{"login": "LOGIN"}
	if err := account.CheckLogin(login); err != nil {
		return err // before a database is made for nothing
	}
	a, err := x.appCreate(ctx)
	if err != nil {
		return err
	}
	acc, err := a.Accounts.CreateUser(ctx, login)
	if err != nil {
		return err
	}
	kind := "account"
	if admin {
		if err := a.Accounts.SetAdmin(ctx, login, true); err != nil {
			return err
		}
		kind = "operator account"
	}
	fmt.Fprintf(x.stdout, "created %s %s (id %d)\n", kind, acc.Login, acc.ID)
	return nil
}

func setupUserPassword(*flag.FlagSet) runFunc {
	return func(ctx context.Context, x *inv) error {
		x.fields = map[string]string{"password": "password"}
		pw, err := readPassword(x)
		if err != nil {
			return err
		}
		a, err := x.app(ctx)
		if err != nil {
			return err
		}
		if err := a.Accounts.SetPassword(ctx, x.args[0], pw); err != nil {
			return err
		}
		if pw == "" {
			fmt.Fprintf(x.stdout, "removed the console password of %s\n", x.args[0])
		} else {
			fmt.Fprintf(x.stdout, "set the console password of %s\n", x.args[0])
		}
		return nil
	}
}

// readPassword asks twice on a terminal, without echo; otherwise it reads
// the first line of stdin (for scripts: `printf '%s\n' "$PW" | postline user password alice`).
func readPassword(x *inv) (string, error) {
	if f, ok := x.stdin.(*os.File); ok && term.IsTerminal(int(f.Fd())) {
		fmt.Fprint(x.stderr, "New password: ")
		a, err := term.ReadPassword(int(f.Fd()))
		fmt.Fprintln(x.stderr)
		if err != nil {
			return "", err
		}
		fmt.Fprint(x.stderr, "Again: ")
		b, err := term.ReadPassword(int(f.Fd()))
		fmt.Fprintln(x.stderr)
		if err != nil {
			return "", err
		}
		if string(a) != string(b) {
			return "", usagef("the two passwords differ")
		}
		return string(a), nil
	}
	line, err := bufio.NewReader(io.LimitReader(x.stdin, 4096)).ReadString('\n')
	if err != nil && err != io.EOF {
		return "", err
	}
	return strings.TrimRight(line, "\r\n"), nil
}

func setupUserList(*flag.FlagSet) runFunc {
	return func(ctx context.Context, x *inv) error {
		a, err := x.app(ctx)
		if err != nil {
			return err
		}
		users, err := a.Accounts.Users(ctx)
		if err != nil {
			return err
		}
		tw := tabwriter.NewWriter(x.stdout, 0, 4, 2, ' ', 0)
		fmt.Fprintln(tw, "ID\tLOGIN\tCREATED\tSTATUS\tROLE\tPASSWORD\tPOOL")
		for _, u := range users {
			status, role, pw := "active", "sender", "no"
			if u.DisabledAt != nil {
				status = "disabled"
			}
			if u.Admin {
				role = "operator"
			}
			if u.PasswordSet {
				pw = "set"
			}
			pool := u.Pool
			if pool == "" {
				pool = "-"
			}
			fmt.Fprintf(tw, "%d\t%s\t%s\t%s\t%s\t%s\t%s\n", u.ID, u.Login, u.CreatedAt.Format(time.RFC3339), status, role, pw, pool)
		}
		return tw.Flush()
	}
}

func setupUserUpdate(fs *flag.FlagSet) runFunc {
	var pool *string // nil: --pool not given
	fs.Func("pool", "the egress `pool` of the --egress-file the account's domains without one of their own send through (\"\" for none)",
		func(v string) error {
			pool = &v
			return nil
		})
	return func(ctx context.Context, x *inv) error {
		x.fields = map[string]string{"delivery.pool": "--pool"}
		if pool == nil {
			return usagef("nothing to change: give --pool")
		}
		a, err := x.app(ctx)
		if err != nil {
			return err
		}
		acc, err := a.Accounts.SetPool(ctx, x.args[0], *pool)
		if err != nil {
			return err
		}
		if acc.Pool == "" {
			fmt.Fprintf(x.stdout, "account %s has no egress pool: its domains without one send from the system's address\n", acc.Login)
		} else {
			fmt.Fprintf(x.stdout, "account %s's domains without a pool of their own now send through egress pool %s\n", acc.Login, acc.Pool)
		}
		return nil
	}
}

func keyCommands() *cmd {
	return &cmd{name: "key", summary: "API keys", subs: []*cmd{
		{name: "create", args: "LOGIN", summary: "create an API key for LOGIN and print it alone on one line (it is shown only now)",
			minArgs: 1, maxArgs: 1, setup: setupKeyCreate},
		{name: "list", args: "LOGIN", summary: "list LOGIN's keys (prefix, last use, status)", minArgs: 1, maxArgs: 1,
			setup: setupKeyList},
		{name: "revoke", args: "KEY_ID", summary: "revoke a key by the id `postline key list` shows", minArgs: 1, maxArgs: 1,
			setup: setupKeyRevoke},
	}}
}

func setupKeyCreate(fs *flag.FlagSet) runFunc {
	name := fs.String("name", "", "a label for the key, e.g. the machine that uses it")
	scopes := fs.String("scopes", "", "comma-separated scopes the key may use ("+strings.Join(account.AllScopes, ",")+"); default: all")
	domains := fs.String("domains", "", "comma-separated domains the key may use; default: all of the account's")
	expires := fs.String("expires", "", "when the key stops working: a duration from now (720h) or an RFC 3339 time; default: never")
	return func(ctx context.Context, x *inv) error {
		x.fields = map[string]string{"name": "--name", "scopes": "--scopes", "domains": "--domains", "expires_at": "--expires"}
		o := account.KeyOptions{Name: *name}
		var err error
		if o.Scopes, err = account.ParseScopes(*scopes); err != nil {
			return err
		}
		if o.Domains, err = account.ParseDomains(*domains); err != nil {
			return err
		}
		if *expires != "" {
			t, err := parseExpiry(*expires, time.Now())
			if err != nil {
				return err
			}
			o.ExpiresAt = &t
		}
		a, err := x.app(ctx)
		if err != nil {
			return err
		}
		key, _, err := a.Accounts.CreateKeyWith(ctx, x.args[0], o)
		if err != nil {
			return err
		}
		fmt.Fprintln(x.stdout, key) // alone on its line, for scripts
		return nil
	}
}

// parseExpiry reads --expires: a Go duration from now or an RFC 3339 time.
func parseExpiry(v string, now time.Time) (time.Time, error) {
	if d, err := time.ParseDuration(v); err == nil {
		return now.Add(d), nil
	}
	t, err := time.Parse(time.RFC3339, v)
	if err != nil {
		return t, usagef("--expires must be a duration (720h) or an RFC 3339 time (2027-01-31T00:00:00Z), got %q", v)
	}
	return t, nil
}

func setupKeyList(*flag.FlagSet) runFunc {
	return func(ctx context.Context, x *inv) error {
		a, err := x.app(ctx)
		if err != nil {
			return err
		}
		keys, err := a.Accounts.Keys(ctx, x.args[0])
		if err != nil {
			return err
		}
		tw := tabwriter.NewWriter(x.stdout, 0, 4, 2, ' ', 0)
		fmt.Fprintln(tw, "ID\tNAME\tPREFIX\tSCOPES\tDOMAINS\tCREATED\tLAST USED\tEXPIRES\tSTATUS")
		for _, k := range keys {
			used, status := "never", "active"
			if k.LastUsedAt != nil {
				used = k.LastUsedAt.Format(time.RFC3339)
			}
			sc, dom, exp := "all", "all", "never"
			if k.Scopes != nil {
				sc = strings.Join(k.Scopes, ",")
			}
			if k.Domains != nil {
				dom = strings.Join(k.Domains, ",")
			}
			if k.ExpiresAt != nil {
				exp = k.ExpiresAt.Format(time.RFC3339)
				if !k.ExpiresAt.After(time.Now()) {
					status = "expired"
				}
			}
			if k.RevokedAt != nil {
				status = "revoked"
			}
			fmt.Fprintf(tw, "%d\t%s\t%s…\t%s\t%s\t%s\t%s\t%s\t%s\n", k.ID, k.Name, k.Prefix, sc, dom,
				k.CreatedAt.Format(time.RFC3339), used, exp, status)
		}
		return tw.Flush()
	}
}

func setupKeyRevoke(*flag.FlagSet) runFunc {
	return func(ctx context.Context, x *inv) error {
		id, err := strconv.ParseInt(x.args[0], 10, 64)
		if err != nil {
			return usagef("KEY_ID must be a number (see `postline key list LOGIN`), got %q", x.args[0])
		}
		a, err := x.app(ctx)
		if err != nil {
			return err
		}
		if err := a.Accounts.RevokeKey(ctx, id); err != nil {
			return err
		}
		fmt.Fprintf(x.stdout, "revoked key %d\n", id)
		return nil
	}
}
