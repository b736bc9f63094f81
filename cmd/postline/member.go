package main

import (
	"context"
	"flag"
	"fmt"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/postline/postline/internal/account"
	"github.com/postline/postline/internal/audit"
)

func setupUserAddMember(fs *flag.FlagSet) runFunc {
	role := fs.String("role", string(account.RoleViewer), "the member's role: owner, developer or viewer")
	return func(ctx context.Context, x *inv) error {
		x.fields = map[string]string{"email": "EMAIL", "role": "--role"}
		r, err := account.ParseRole(*role)
		if err != nil {
			return err
		}
		a, err := x.app(ctx)
		if err != nil {
			return err
		}
		acc, err := a.Accounts.User(ctx, x.args[0])
		if err != nil {
			return err
		}
		token, m, err := a.Team.Invite(ctx, acc.ID, x.args[1], r)
		if err != nil {
			return err
		}
		a.Audit.Record(ctx, audit.Entry{AccountID: acc.ID, Actor: "operator (cli)", Action: audit.MemberInvited,
			Target: m.Email + " as " + string(m.Role), Client: "cli"})
		link := strings.TrimSuffix(x.cfg.EffectivePublicURL(), "/") + "/join/" + token
		fmt.Fprintf(x.stdout, "invited %s to %s as %s; send them this link (it works once, until %s):\n%s\n",
			m.Email, acc.Login, m.Role, m.InviteExpiresAt.UTC().Format("2006-01-02 15:04 MST"), link)
		return nil
	}
}

func setupUserMembers(*flag.FlagSet) runFunc {
	return func(ctx context.Context, x *inv) error {
		a, err := x.app(ctx)
		if err != nil {
			return err
		}
		acc, err := a.Accounts.User(ctx, x.args[0])
		if err != nil {
			return err
		}
		ms, err := a.Team.Members(ctx, acc.ID)
		if err != nil {
			return err
		}
		now := time.Now()
		tw := tabwriter.NewWriter(x.stdout, 0, 4, 2, ' ', 0)
		fmt.Fprintln(tw, "EMAIL\tROLE\tSTATE\tLAST SIGN-IN")
		for _, m := range ms {
			state, seen := "active", "never"
			switch {
			case m.PasswordSet:
			case m.Pending(now):
				state = "invited"
			default:
				state = "link expired"
			}
			if m.LastSignInAt != nil {
				seen = m.LastSignInAt.Format(time.RFC3339)
			}
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", m.Email, m.Role, state, seen)
		}
		return tw.Flush()
	}
}

func setupUserRemoveMember(*flag.FlagSet) runFunc {
	return func(ctx context.Context, x *inv) error {
		x.fields = map[string]string{"email": "EMAIL"}
		a, err := x.app(ctx)
		if err != nil {
			return err
		}
		acc, err := a.Accounts.User(ctx, x.args[0])
		if err != nil {
			return err
		}
		email, err := account.CheckEmail(x.args[1])
		if err != nil {
			return err
		}
		m, err := a.Team.RemoveByEmail(ctx, acc.ID, email)
		if err != nil {
			return err
		}
		a.Audit.Record(ctx, audit.Entry{AccountID: acc.ID, Actor: "operator (cli)", Action: audit.MemberRemoved, Target: m.Email, Client: "cli"})
		fmt.Fprintf(x.stdout, "removed %s from %s; its sessions have ended\n", m.Email, acc.Login)
		return nil
	}
}
