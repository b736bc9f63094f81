// Command postline is the whole service in one binary: `postline serve`
// runs the API; the other subcommands manage accounts, keys and domains on
// the same database. Exit status: 0 on success, 2 on usage errors, 1
// otherwise, with the reason on stderr.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"sort"
	"strings"
	"syscall"

	"github.com/postline/postline/internal/app"
	"github.com/postline/postline/internal/config"
	"github.com/postline/postline/internal/domain"
)

// version is set at build time with -ldflags "-X main.version=...".
var version = "dev"

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	code := run(ctx, os.Args[1:], env{stdin: os.Stdin, stdout: os.Stdout, stderr: os.Stderr, getenv: os.Getenv})
	stop()
	os.Exit(code)
}

// env is the process environment a command sees; tests supply their own.
type env struct {
	stdin          io.Reader
	stdout, stderr io.Writer
	getenv         func(string) string
}

// usageError makes run exit with status 2.
type usageError struct{ msg string }

func (e usageError) Error() string { return e.msg }

func usagef(format string, args ...any) error { return usageError{fmt.Sprintf(format, args...)} }

type command struct {
	summary string
	run     func(ctx context.Context, e env, args []string) error
}

func commands() map[string]command {
	return map[string]command{
		"serve":       {"run the HTTP API", cmdServe},
		"migrate":     {"apply database migrations and exit", cmdMigrate},
		"user":        {"user create|list|disable LOGIN", cmdUser},
		"key":         {"key create LOGIN [--name N] | list LOGIN | revoke KEY_ID", cmdKey},
		"domain":      {"domain add|list|show|verify|set-tracking|set-auth|track|remove ...", cmdDomain},
		"suppression": {"suppression add DOMAIN RECIPIENT --type T | remove DOMAIN ID | list DOMAIN | import DOMAIN FILE", cmdSuppression},
		"webhook":     {"webhook add DOMAIN URL [--events a,b] | list DOMAIN | remove DOMAIN ID", cmdWebhook},
		"validate":    {"validate [--strict] [--offline] [ADDRESS...]: JSON lines out; stdin when no address", cmdValidate},
		"dev":         {"dev seed-log DOMAIN --count N | dev smtp-sink [--listen ADDR] [--dir DIR]", cmdDev},
		"version": {"print the version", func(_ context.Context, e env, _ []string) error {
			fmt.Fprintln(e.stdout, "postline", version)
			return nil
		}},
	}
}

func run(ctx context.Context, args []string, e env) int {
	cmds := commands()
	if len(args) == 0 || args[0] == "-h" || args[0] == "--help" || args[0] == "help" {
		usage(e.stderr, cmds)
		if len(args) == 0 {
			return 2
		}
		return 0
	}
	c, ok := cmds[args[0]]
	if !ok {
		fmt.Fprintf(e.stderr, "postline: unknown command %q\n", args[0])
		usage(e.stderr, cmds)
		return 2
	}
	err := c.run(ctx, e, args[1:])
	var ue usageError
	switch {
	case err == nil:
		return 0
	case errors.Is(err, flag.ErrHelp):
		return 0
	case errors.As(err, &ue):
		fmt.Fprintf(e.stderr, "postline %s: %s\n", args[0], ue.msg)
		return 2
	default:
		fmt.Fprintf(e.stderr, "postline %s: %v\n", args[0], err)
		return 1
	}
}

func usage(w io.Writer, cmds map[string]command) {
	names := make([]string, 0, len(cmds))
	for n := range cmds {
		names = append(names, n)
	}
	sort.Strings(names)
	fmt.Fprintln(w, "usage: postline COMMAND [flags] [args]\n\ncommands:")
	for _, n := range names {
		fmt.Fprintf(w, "  %-12s %s\n", n, cmds[n].summary)
	}
	fmt.Fprintln(w, "\nEvery command takes the configuration flags; see `postline serve -h`.")
}

// flags makes a FlagSet with the configuration flags registered.
func flags(e env, name string) (*flag.FlagSet, *config.Loader) {
	fs := flag.NewFlagSet("postline "+name, flag.ContinueOnError)
	fs.SetOutput(e.stderr)
	return fs, config.Register(fs, e.getenv)
}

// parse parses flags interspersed with positional arguments (so that
// `domain add alice example.com --direct` works) and loads the config.
func parse(fs *flag.FlagSet, l *config.Loader, args []string) ([]string, config.Config, error) {
	var pos []string
	for {
		if err := fs.Parse(args); err != nil {
			if errors.Is(err, flag.ErrHelp) {
				return nil, config.Config{}, err
			}
			return nil, config.Config{}, usageError{err.Error()}
		}
		rest := fs.Args()
		if len(rest) == 0 {
			break
		}
		if rest[0] == "--" {
			pos = append(pos, rest[1:]...)
			break
		}
		pos = append(pos, rest[0])
		args = rest[1:]
	}
	cfg, err := l.Load()
	if err != nil {
		return nil, cfg, usageError{strings.ReplaceAll(err.Error(), "\n", "; ")}
	}
	return pos, cfg, nil
}

// openApp opens the app for a management command (logs to stderr, warnings only).
func openApp(ctx context.Context, e env, cfg config.Config) (*app.App, error) {
	cfg.LogLevel = "warn"
	return app.Open(ctx, cfg, app.NewLogger(cfg, e.stderr), app.Options{})
}

// openDomain opens the app for a management command about one domain
// (any owner: the operator's CLI).
func openDomain(ctx context.Context, e env, cfg config.Config, name string) (*app.App, domain.Domain, error) {
	a, err := openApp(ctx, e, cfg)
	if err != nil {
		return nil, domain.Domain{}, err
	}
	d, err := a.Domains.Get(ctx, name)
	if err != nil {
		a.Close()
		return nil, domain.Domain{}, err
	}
	return a, d, nil
}
