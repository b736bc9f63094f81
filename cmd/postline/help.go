package main

import (
	"flag"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"

	"github.com/postline/postline/internal/config"
)

const settingsHint = "Server settings (--data-dir, --database-url, --secret-key, ...) are accepted by every command:\nsee `postline help settings`."

// groupUsage lists a group's commands with their arguments.
func groupUsage(w io.Writer, c *cmd, names []string) {
	if len(names) == 0 {
		fmt.Fprintln(w, "Usage: postline COMMAND [ARGS] [flags]")
	} else {
		fmt.Fprintf(w, "Usage: %s COMMAND [ARGS] [flags]\n", path(names))
	}
	if c.summary != "" {
		fmt.Fprintf(w, "\n%s\n", capitalise(c.summary))
	}
	fmt.Fprintln(w, "\nCommands:")
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	for _, s := range c.subs {
		fmt.Fprintf(tw, "  %s\t%s\n", strings.TrimSpace(s.name+" "+s.args), s.summary)
	}
	tw.Flush()
	fmt.Fprintf(w, "\nRun `%s COMMAND --help` for a command's flags.\n", strings.TrimSpace(path(names)))
	if len(names) == 0 {
		fmt.Fprintln(w, "Run `postline help settings` for the server settings every command accepts.")
	}
}

// leafUsage prints a command's usage line and only its own flags; the
// shared settings are listed once, by `postline help settings`.
func leafUsage(w io.Writer, c *cmd, names []string, fs *flag.FlagSet, own map[string]bool) {
	line := path(names)
	if c.args != "" {
		line += " " + c.args
	}
	fmt.Fprintf(w, "Usage: %s [flags]\n\n%s\n", line, capitalise(c.summary))
	if c.help != "" {
		fmt.Fprintf(w, "\n%s\n", c.help)
	}
	if len(own) > 0 {
		fmt.Fprintln(w, "\nFlags:")
		printFlags(w, fs, func(f *flag.Flag) bool { return own[f.Name] }, false)
	}
	fmt.Fprintf(w, "\n%s\n", settingsHint)
}

// printSettings lists every server setting with its environment variable.
func printSettings(w io.Writer) {
	fs := flag.NewFlagSet("settings", flag.ContinueOnError)
	config.Register(fs, func(string) string { return "" })
	fmt.Fprintln(w, "Server settings, accepted by every command.\n"+
		"Precedence: defaults < JSON file (--config) < POSTLINE_* environment < flags.")
	fmt.Fprintln(w)
	printFlags(w, fs, func(*flag.Flag) bool { return true }, true)
}

func printFlags(w io.Writer, fs *flag.FlagSet, keep func(*flag.Flag) bool, withEnv bool) {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fs.VisitAll(func(f *flag.Flag) {
		if !keep(f) {
			return
		}
		typ, usage := flag.UnquoteUsage(f)
		name := "--" + f.Name
		if typ != "" {
			name += " " + strings.ToUpper(typ)
		}
		if def := f.DefValue; def != "" && def != "0" && def != "false" && !strings.Contains(usage, "default") {
			usage += " (default " + def + ")"
		}
		if withEnv {
			usage += " [" + config.EnvName(f.Name) + "]"
		}
		fmt.Fprintf(tw, "  %s\t%s\n", name, usage)
	})
	tw.Flush()
}

func capitalise(s string) string {
	if s == "" {
		return s
	}
	return strings.ToUpper(s[:1]) + s[1:] + "."
}
