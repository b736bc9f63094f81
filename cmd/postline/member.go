package main

import (
	"context"
	"flag"
	"fmt"
	"strings"

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
