package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"strconv"
	"text/tabwriter"
	"time"

	"github.com/postline/postline/internal/app"
	"github.com/postline/postline/internal/domain"
	"github.com/postline/postline/internal/templates"
)

func templateCommands() *cmd {
	return &cmd{name: "template", summary: "a domain's stored message templates (Handlebars), with versions", subs: []*cmd{
		{name: "add", args: "DOMAIN NAME", summary: "create a template (version 1) from --subject and --text/--text-file (and --html/--html-file)",
			minArgs: 2, maxArgs: 2, setup: setupTemplateWrite(false)},
		{name: "update", args: "DOMAIN NAME", summary: "store a new version of a template, which becomes the active one",
			minArgs: 2, maxArgs: 2, setup: setupTemplateWrite(true)},
		{name: "list", args: "DOMAIN", summary: "list DOMAIN's templates with their active version", minArgs: 1, maxArgs: 1, setup: setupTemplateList},
		{name: "show", args: "DOMAIN NAME", summary: "print a template's parts (--version N for an older one)", minArgs: 2, maxArgs: 2,
			setup: setupTemplateShow(false)},
		{name: "render", args: "DOMAIN NAME", summary: "print a template rendered with --variables JSON, as a send would render it",
			minArgs: 2, maxArgs: 2, setup: setupTemplateShow(true)},
		{name: "remove", args: "DOMAIN NAME", summary: "delete a template and all its versions", minArgs: 2, maxArgs: 2, setup: setupTemplateRemove},
	}}
}

func messageCommands() *cmd {
	return &cmd{name: "message", summary: "one sent or scheduled message", subs: []*cmd{
		{name: "show", args: "DOMAIN MESSAGE_ID", summary: "print each recipient's state (scheduled, pending, delivered ...)",
			minArgs: 2, maxArgs: 2, setup: setupMessageShow},
		{name: "cancel", args: "DOMAIN MESSAGE_ID", summary: "cancel what is not sent yet (logged as failed, reason cancelled)",
			minArgs: 2, maxArgs: 2, setup: setupMessageCancel},
	}}
}

// part reads a template part from a flag or, with the -file flag, a file.
func part(text, file string) (string, error) {
	if file == "" {
		return text, nil
	}
	b, err := os.ReadFile(file)
	return string(b), err
}

func setupTemplateWrite(update bool) func(fs *flag.FlagSet) runFunc {
	return func(fs *flag.FlagSet) runFunc {
		subject := fs.String("subject", "", "the subject template")
		text := fs.String("text", "", "the text part template")
		textFile := fs.String("text-file", "", "read the text part from this `file`")
		html := fs.String("html", "", "the HTML part template")
		htmlFile := fs.String("html-file", "", "read the HTML part from this `file`")
		strict := fs.Bool("strict", false, "refuse sends that miss a variable the template prints")
		return onDomain(func(ctx context.Context, x *inv, a *app.App, d domain.Domain) error {
			x.fields = map[string]string{"name": "NAME", "subject": "--subject", "text": "--text", "html": "--html"}
			in := templates.Input{Name: x.args[1], Subject: *subject, Strict: *strict}
			var err error
			if in.Text, err = part(*text, *textFile); err != nil {
				return err
			}
			if in.HTML, err = part(*html, *htmlFile); err != nil {
				return err
			}
			var t templates.Template
			if update {
				t, err = a.Templates.Update(ctx, d.ID, x.args[1], in)
			} else {
				t, err = a.Templates.Create(ctx, d.ID, in)
			}
			if err != nil {
				return err
			}
			fmt.Fprintf(x.stdout, "template %s of %s: version %d is active\n", t.Name, d.Name, t.Version)
			return nil
		})
	}
}

func setupTemplateList(*flag.FlagSet) runFunc {
	return onDomain(func(ctx context.Context, x *inv, a *app.App, d domain.Domain) error {
		list, err := a.Templates.List(ctx, d.ID)
		if err != nil {
			return err
		}
		tw := tabwriter.NewWriter(x.stdout, 0, 4, 2, ' ', 0)
		fmt.Fprintln(tw, "NAME\tVERSION\tVERSIONS\tSTRICT\tSUBJECT")
		for _, t := range list {
			fmt.Fprintf(tw, "%s\t%d\t%d\t%t\t%s\n", t.Name, t.Version, t.Versions, t.Strict, t.Subject)
		}
		return tw.Flush()
	})
}

func setupTemplateShow(render bool) func(fs *flag.FlagSet) runFunc {
	return func(fs *flag.FlagSet) runFunc {
		version := fs.Int("version", 0, "a version number (default: the active one)")
		var vars *string
		if render {
			vars = fs.String("variables", "{}", "a JSON object to render with")
		}
		return onDomain(func(ctx context.Context, x *inv, a *app.App, d domain.Domain) error {
			x.fields = map[string]string{"variables": "--variables", "version": "--version"}
			t, c, err := a.Templates.Load(ctx, d.ID, x.args[1], *version)
			if err != nil {
				return err
			}
			subject, text, html := t.Subject, t.Text, t.HTML
			if render {
				var m map[string]any
				if err := json.Unmarshal([]byte(*vars), &m); err != nil {
					return usagef("--variables must be a JSON object: %v", err)
				}
				out, err := c.Render(m)
				if err != nil {
					return err
				}
				subject, text, html = out.Subject, out.Text, out.HTML
			}
			fmt.Fprintf(x.stdout, "Template: %s (version %d, strict %t)\nSubject: %s\n\n--- text ---\n%s\n", t.Name, t.Version, t.Strict, subject, text)
			if html != "" {
				fmt.Fprintf(x.stdout, "--- html ---\n%s\n", html)
			}
			return nil
		})
	}
}

func setupTemplateRemove(*flag.FlagSet) runFunc {
	return onDomain(func(ctx context.Context, x *inv, a *app.App, d domain.Domain) error {
		if err := a.Templates.Delete(ctx, d.ID, x.args[1]); err != nil {
			return err
		}
		fmt.Fprintf(x.stdout, "removed template %s of %s\n", x.args[1], d.Name)
		return nil
	})
}

func setupMessageShow(*flag.FlagSet) runFunc {
	return onDomain(func(ctx context.Context, x *inv, a *app.App, d domain.Domain) error {
		ds, err := a.Sending.Message(ctx, d.ID, x.args[1])
		if err != nil {
			return err
		}
		first := ds[0]
		fmt.Fprintf(x.stdout, "Message: %s\nSubject: %s\nAccepted: %s\n", first.MessageID, first.Subject, first.CreatedAt.UTC().Format(time.RFC3339))
		if first.DeliverAt != nil {
			fmt.Fprintf(x.stdout, "Scheduled for: %s\n", first.DeliverAt.UTC().Format(time.RFC3339))
		}
		tw := tabwriter.NewWriter(x.stdout, 0, 4, 2, ' ', 0)
		fmt.Fprintln(tw, "RECIPIENT\tSTATE\tATTEMPTS\tLAST REPLY")
		for _, m := range ds {
			reply := "-"
			if m.LastCode != 0 {
				reply = strconv.Itoa(m.LastCode) + " " + m.LastMessage
			}
			fmt.Fprintf(tw, "%s\t%s\t%d\t%s\n", m.Recipient, a.Sending.StateOf(m), m.Attempts, reply)
		}
		return tw.Flush()
	})
}

func setupMessageCancel(*flag.FlagSet) runFunc {
	return onDomain(func(ctx context.Context, x *inv, a *app.App, d domain.Domain) error {
		ds, err := a.Sending.Cancel(ctx, d.ID, x.args[1])
		if err != nil {
			return err
		}
		fmt.Fprintf(x.stdout, "cancelled %d deliver(ies) of %s\n", len(ds), x.args[1])
		return nil
	})
}
