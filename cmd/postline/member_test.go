package main

import (
	"context"
	"regexp"
	"strings"
	"testing"

	"github.com/postline/postline/internal/app"
	"github.com/postline/postline/internal/config"
)

// `postline user add-member` prints a one-time link under --public-url
// that invites the member to the account with its role; a wrong role, an
// unknown account and the member limit are refused with their names.
func TestCLIAddMember(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	runSteps(t, dir, []cliStep{
		{[]string{"user", "create", "alice"}, 0, "created account alice"},
		{[]string{"user", "add-member", "alice", "ann@example.com", "--role", "boss"}, 2, "--role: role must be owner, developer or viewer"},
		{[]string{"user", "add-member", "nobody", "ann@example.com"}, 1, `account "nobody" not found`},
		{[]string{"user", "add-member", "alice", "not-an-address"}, 2, "EMAIL: email must be one address"},
	})
	env := map[string]string{"POSTLINE_DATA_DIR": dir, "POSTLINE_PUBLIC_URL": "https://mail.example.com", "POSTLINE_MEMBERS_PER_ACCOUNT": "1"}
	code, out, errs := cliEnv(t, env, "user", "add-member", "alice", "Ann@Example.com", "--role", "developer")
	m := regexp.MustCompile(`(?m)^https://mail\.example\.com/join/([A-Za-z0-9_-]{43})$`).FindStringSubmatch(out)
	if code != 0 || m == nil || !strings.Contains(out, "invited ann@example.com to alice as developer") {
		t.Fatalf("add-member: exit %d\n%s%s", code, out, errs)
	}
	code, _, errs = cliEnv(t, env, "user", "add-member", "alice", "ben@example.com")
	if code == 0 || !strings.Contains(errs, "members-per-account") {
		t.Fatalf("a second member past --members-per-account 1: exit %d %q", code, errs)
	}

	runSteps(t, dir, []cliStep{
		{[]string{"user", "members", "alice"}, 0, "ann@example.com  developer  invited"},
		{[]string{"user", "remove-member", "alice", "nobody@example.com"}, 1, "nobody@example.com is not a member of this account"},
	})

	// The link is the member's invitation (the console's /join/ page reads it so).
	cfg := config.Default()
	cfg.DataDir = dir
	a, err := app.Open(context.Background(), cfg, nil, app.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	mem, err := a.Team.Invitation(context.Background(), m[1])
	if err != nil || mem.Email != "ann@example.com" || mem.Role != "developer" {
		t.Fatalf("the printed link's invitation: %+v, %v", mem, err)
	}
	a.Close()
	runSteps(t, dir, []cliStep{
		{[]string{"user", "remove-member", "alice", "ANN@example.com"}, 0, "removed ann@example.com from alice"},
		{[]string{"user", "members", "alice"}, 0, "EMAIL"},
	})
	if _, out, _ := cli(t, dir, "user", "members", "alice"); strings.Contains(out, "ann@") {
		t.Errorf("members after the removal: %q", out)
	}
}
