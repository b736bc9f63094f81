package main

import (
	"context"
	"flag"
	"fmt"
	"runtime/debug"
	"strings"

	"github.com/postline/postline/internal/message"
)

// commandTree is every command of the binary. Leaves name their positional
// arguments in capitals; their setup registers only their own flags (the
// server settings are added to every leaf by runLeaf).
func commandTree() *cmd {
	root := &cmd{subs: []*cmd{
		{name: "serve", summary: "run the HTTP API, the delivery workers and the configured SMTP listeners",
			help:  "On its first start with an empty database it creates the account \"admin\" and prints its API key once.",
			setup: setupServe, maxArgs: 0},
		{name: "migrate", summary: "apply database migrations and exit", setup: setupMigrate, maxArgs: 0},
		userCommands(),
		keyCommands(),
		domainCommands(),
		suppressionCommands(),
		webhookCommands(),
		routeCommands(),
		inboundCommands(),
		templateCommands(),
		messageCommands(),
		shapingCommands(),
		queueCommands(),
		{name: "validate", args: "[ADDRESS...]", summary: "validate addresses: JSON lines out, in input order; stdin when no address is given",
			setup: setupValidate, maxArgs: -1},
		{name: "cache", summary: "the validation cache", subs: []*cmd{
			{name: "purge", args: "[DOMAIN|ADDRESS]", summary: "drop cached validation results: all of them, a domain's, or one address's",
				setup: setupCachePurge, maxArgs: 1},
		}},
		{name: "secret", summary: "the secret key that seals DKIM keys, relay passwords and webhook secrets", subs: []*cmd{
			{name: "rotate", summary: "re-seal every sealed value under a new secret key, in one transaction",
				help: "Stop every `postline serve` using this database first, and start them again with the new key.\n" +
					"Without --new-key a key is generated. A key kept in DATA_DIR/secret.key is replaced there;\n" +
					"a key given by --secret-key or POSTLINE_SECRET_KEY must be changed where it is set: the new key is printed.",
				setup: setupSecretRotate, maxArgs: 0},
		}},
		{name: "store", summary: "the database itself", subs: []*cmd{
			{name: "copy", summary: "copy the SQLite database into a new PostgreSQL database (--to postgres://...)",
				help: "Stop every `postline serve` first. The target must be migrated or empty of rows; every table is copied\n" +
					"in batches with its ids, sealed secrets, queue state, log and counts, then row counts are compared.\n" +
					"Afterwards run serve with --database-url set to the PostgreSQL URL and the same secret key.",
				setup: setupStoreCopy, maxArgs: 0},
		}},
		{name: "backup", args: "PATH", summary: "write a consistent copy of the SQLite database to PATH while serve runs (VACUUM INTO)",
			help: "PATH must not exist. The copy holds sealed values: keep the secret key with it (DATA_DIR/secret.key).\n" +
				"For PostgreSQL use pg_dump.",
			setup: setupBackup, minArgs: 1, maxArgs: 1},
		{name: "dev", summary: "tools for trying Postline on one machine", subs: []*cmd{
			{name: "seed-log", args: "DOMAIN", summary: "record realistic log entries of every type over the last 30 days",
				setup: setupSeedLog, minArgs: 1, maxArgs: 1},
			{name: "smtp-sink", summary: "run a local SMTP server that accepts every message and prints a line for each",
				setup: setupSMTPSink, maxArgs: 0},
		}},
		{name: "version", summary: "print the version, VCS revision and build time", setup: setupVersion, maxArgs: 0},
	}}
	root.subs = append(root.subs, &cmd{name: "help", args: "[COMMAND...|settings]",
		summary: "show a command's help, or every server setting with `help settings`", maxArgs: -1,
		setup: func(*flag.FlagSet) runFunc {
			return func(_ context.Context, x *inv) error { return help(x, root) }
		}})
	return root
}

// help prints the help of the command named by the arguments, or the
// settings list.
func help(x *inv, root *cmd) error {
	if len(x.args) == 1 && x.args[0] == "settings" {
		printSettings(x.stdout)
		return nil
	}
	c, names := root, []string{}
	for _, a := range x.args {
		var next *cmd
		for _, s := range c.subs {
			if s.name == a {
				next = s
			}
		}
		if next == nil {
			return usagef("no command %q under %s; see `postline help`", a, strings.TrimSpace(path(names)))
		}
		c, names = next, append(names, a)
	}
	if c.setup == nil {
		groupUsage(x.stdout, c, names)
		return nil
	}
	return dispatch(context.Background(), x.env, c, names, []string{"--help"})
}

func setupVersion(*flag.FlagSet) runFunc {
	return func(_ context.Context, x *inv) error {
		fmt.Fprintln(x.stdout, versionText())
		return nil
	}
}

// versionText reads the version from the build information Go embeds: the
// module version (for `go install ...@v1.2.3`) and the VCS revision and
// time (for builds in a git checkout).
func versionText() string {
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return "postline (no build information)"
	}
	v := bi.Main.Version
	if v == "" || v == "(devel)" {
		v = "devel"
	}
	out := "postline " + v
	var rev, at, dirty string
	for _, s := range bi.Settings {
		switch s.Key {
		case "vcs.revision":
			rev = s.Value
		case "vcs.time":
			at = s.Value
		case "vcs.modified":
			if s.Value == "true" {
				dirty = " (modified)"
			}
		}
	}
	if rev != "" {
		out += fmt.Sprintf(" revision %s%s built from a commit of %s", rev, dirty, at)
	}
	// Which code makes the DKIM RSA signatures: Go's crypto/rsa, or
	// OpenSSL's libcrypto in a build with -tags openssl.
	return out + " " + bi.GoVersion + " (RSA signing: " + message.RSABackend + ")"
}
