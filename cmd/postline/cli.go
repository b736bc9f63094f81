package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"regexp"
	"strings"

	"github.com/postline/postline/internal/config"
)

// cmd is one node of the command tree: a group with subcommands, or a leaf
// that runs. The tree is the CLI's one source of truth: dispatch, usage
// lines and help all come from it.
type cmd struct {
	name string
	// args is the positional part of the usage line, arguments in capitals:
	// "LOGIN DOMAIN", "[ADDRESS...]".
	args    string
	summary string // one line, shown in the parent's list
	help    string // optional paragraph under the usage line
	// minArgs and maxArgs bound the positional arguments (maxArgs -1: any).
	minArgs, maxArgs int
	// setup registers the command's own flags and returns what runs it.
	setup func(fs *flag.FlagSet) runFunc
	subs  []*cmd
	// destination says the command's DOMAIN is a place mail goes to, not
	// an account's sending domain, so it takes no --account.
	destination bool
}

type runFunc func(ctx context.Context, x *inv) error

// path is the command's full name for messages: "postline domain add".
func path(names []string) string { return "postline " + strings.Join(names, " ") }

// dispatch walks args down the tree from c (reached by names) and runs the
// leaf. Help requests print to stdout and succeed; mistakes are usage
// errors that name the command.
func dispatch(ctx context.Context, e env, c *cmd, names []string, args []string) error {
	if c.setup != nil {
		return runLeaf(ctx, e, c, names, args)
	}
	if len(args) == 0 {
		groupUsage(e.stderr, c, names)
		return usageError{silent: true}
	}
	if a := args[0]; a == "-h" || a == "-help" || a == "--help" || (a == "help" && len(names) > 0) {
		groupUsage(e.stdout, c, names)
		return nil
	}
	for _, s := range c.subs {
		if s.name == args[0] {
			return dispatch(ctx, e, s, append(names, s.name), args[1:])
		}
	}
	return usagef("%s: unknown command %q; want %s (see %s --help)", path(names), args[0], subNames(c), path(names))
}

func subNames(c *cmd) string {
	n := make([]string, len(c.subs))
	for i, s := range c.subs {
		n[i] = s.name
	}
	return orList(n)
}

// runLeaf parses the leaf's own flags and the shared settings (accepted by
// every command), checks the positional arguments and runs it.
func runLeaf(ctx context.Context, e env, c *cmd, names []string, args []string) error {
	fs := flag.NewFlagSet(path(names), flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	fs.Usage = func() {}
	run := c.setup(fs)
	var account *string
	if strings.HasPrefix(c.args, "DOMAIN") && !c.destination {
		// Several accounts may claim one name until one of them verifies it.
		account = fs.String("account", "", "the `LOGIN` whose DOMAIN is meant, when several accounts claim the name")
	}
	own := map[string]bool{}
	fs.VisitAll(func(f *flag.Flag) { own[f.Name] = true })
	loader := config.Register(fs, e.getenv)
	pos, err := parseInterspersed(fs, args)
	if errors.Is(err, flag.ErrHelp) {
		leafUsage(e.stdout, c, names, fs, own)
		return nil
	}
	if err != nil {
		return usagef("%s: %s", path(names), flagError(err, path(names)))
	}
	if len(pos) < c.minArgs || (c.maxArgs >= 0 && len(pos) > c.maxArgs) {
		return usagef("%s: %s (see %s --help)", path(names), argCountError(c, pos), path(names))
	}
	cfg, err := loader.Load()
	if err != nil {
		return usagef("%s: %s", path(names), strings.ReplaceAll(err.Error(), "\n", "; "))
	}
	x := &inv{env: e, cfg: cfg, args: pos, name: path(names)}
	if account != nil {
		x.account = *account
	}
	defer x.close()
	err = x.explain(ctx, run(ctx, x))
	var ue usageError
	switch {
	case err == nil:
		return nil
	case errors.As(err, &ue):
		if !strings.HasPrefix(ue.msg, path(names)+":") {
			ue.msg = path(names) + ": " + ue.msg
		}
		return ue
	default:
		return fmt.Errorf("%s: %w", path(names), err)
	}
}

func argCountError(c *cmd, pos []string) string {
	if c.args == "" {
		return fmt.Sprintf("takes no arguments, got %q", strings.Join(pos, " "))
	}
	return fmt.Sprintf("want %s, got %d argument(s)", c.args, len(pos))
}

// parseInterspersed parses flags given before, between or after the
// positional arguments (`domain add alice example.com --direct`); "--"
// ends the flags.
func parseInterspersed(fs *flag.FlagSet, args []string) ([]string, error) {
	var pos []string
	for {
		if err := fs.Parse(args); err != nil {
			return nil, err
		}
		rest := fs.Args()
		if len(rest) == 0 {
			return pos, nil
		}
		if rest[0] == "--" {
			return append(pos, rest[1:]...), nil
		}
		pos = append(pos, rest[0])
		args = rest[1:]
	}
}

var (
	reBadValue   = regexp.MustCompile(`^invalid (?:boolean )?value "(.*)" for (?:flag )?-([\w-]+): (.*)$`)
	reUnknown    = regexp.MustCompile(`^flag provided but not defined: -+([\w-]+)$`)
	reNeedsValue = regexp.MustCompile(`^flag needs an argument: -+([\w-]+)$`)
)

// flagError rewrites the flag package's messages as one line that names
// the flag the way users type it (--name) and what it accepts.
func flagError(err error, cmdPath string) string {
	msg := err.Error()
	if m := reBadValue.FindStringSubmatch(msg); m != nil {
		why := m[3]
		switch why {
		case "parse error":
			why = "not a valid value"
			if strings.HasPrefix(msg, "invalid boolean") {
				why = "want true or false"
			}
		case "value out of range":
			why = "out of range"
		}
		return fmt.Sprintf("--%s: %s, got %q", m[2], why, m[1])
	}
	if m := reUnknown.FindStringSubmatch(msg); m != nil {
		return fmt.Sprintf("unknown flag --%s (see %s --help)", m[1], cmdPath)
	}
	if m := reNeedsValue.FindStringSubmatch(msg); m != nil {
		return fmt.Sprintf("--%s needs a value", m[1])
	}
	return msg
}

// choice is a string flag that takes one of a fixed set of values, so a
// wrong one is a usage error naming them.
type choice struct {
	allowed []string
	val     *string
}

// choiceFlag registers a choice flag; the usage names the values.
func choiceFlag(fs *flag.FlagSet, name, usage string, allowed ...string) *string {
	v := new(string)
	fs.Var(choice{allowed: allowed, val: v}, name, usage+": "+strings.Join(allowed, ", "))
	return v
}

func (c choice) String() string {
	if c.val == nil {
		return ""
	}
	return *c.val
}

func (c choice) Set(s string) error {
	for _, a := range c.allowed {
		if s == a {
			*c.val = s
			return nil
		}
	}
	return fmt.Errorf("want %s", orList(c.allowed))
}

// orList joins words as "a, b or c".
func orList(words []string) string {
	switch len(words) {
	case 0:
		return ""
	case 1:
		return words[0]
	}
	return strings.Join(words[:len(words)-1], ", ") + " or " + words[len(words)-1]
}
