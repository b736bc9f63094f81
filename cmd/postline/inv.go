package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"sort"
	"strings"

	"github.com/postline/postline/internal/app"
	"github.com/postline/postline/internal/apperr"
	"github.com/postline/postline/internal/config"
	"github.com/postline/postline/internal/domain"
)

// inv is one invocation of a leaf command: its environment, settings and
// positional arguments, and the app once the command opened it.
type inv struct {
	env
	cfg  config.Config
	args []string
	name string // "postline domain add"
	// fields maps service field names to the flag or argument that set
	// them, so a refused value is reported as the user typed it.
	fields map[string]string
	a      *app.App
	// account is --account LOGIN of the commands that name a DOMAIN.
	account string
}

// app opens the existing database the settings name. A management command
// never creates one: run from the wrong directory it would otherwise make
// an empty database and report "account not found".
func (x *inv) app(ctx context.Context) (*app.App, error) { return x.open(ctx, false) }

// appCreate opens the database, creating it when missing (serve, migrate,
// user create: the commands that start a new installation).
func (x *inv) appCreate(ctx context.Context) (*app.App, error) { return x.open(ctx, true) }

func (x *inv) open(ctx context.Context, create bool) (*app.App, error) {
	if x.a != nil {
		return x.a, nil
	}
	if p, ok := x.cfg.SQLitePath(); ok && !create {
		if _, err := os.Stat(p); errors.Is(err, os.ErrNotExist) {
			return nil, fmt.Errorf("no database at %s: point --data-dir (POSTLINE_DATA_DIR) or --database-url at the one "+
				"`postline serve` uses, or create this one with `postline migrate`", p)
		}
	}
	cfg := x.cfg
	cfg.LogLevel = "warn"
	a, err := app.Open(ctx, cfg, app.NewLogger(cfg, x.stderr), app.Options{Command: strings.TrimPrefix(x.name, "postline ")})
	if err != nil {
		return nil, err
	}
	x.a = a
	return a, nil
}

// domain opens the app and finds a domain by name for the operator.
func (x *inv) domain(ctx context.Context, name string) (*app.App, domain.Domain, error) {
	a, err := x.app(ctx)
	if err != nil {
		return nil, domain.Domain{}, err
	}
	d, err := a.Domains.ForOperator(ctx, name, x.account, x.loginOf)
	return a, d, err
}

// loginOf names an account for the operator.
func (x *inv) loginOf(ctx context.Context, id int64) (string, error) {
	users, err := x.a.Accounts.Users(ctx)
	if err != nil {
		return "", err
	}
	for _, u := range users {
		if u.ID == id {
			return u.Login, nil
		}
	}
	return fmt.Sprintf("account %d", id), nil
}

func (x *inv) close() {
	if x.a != nil {
		x.a.Close()
		x.a = nil
	}
}

// explain turns a command's error into what the operator needs: a refused
// field becomes a usage error naming the flag or argument, and "not
// found" in a database without accounts says which database that was.
func (x *inv) explain(ctx context.Context, err error) error {
	e, ok := apperr.As(err)
	if !ok {
		return err
	}
	switch e.Code {
	case apperr.Invalid:
		return usageError{msg: x.fieldText(e)}
	case apperr.NotFound:
		if x.a != nil {
			if users, lerr := x.a.Accounts.Users(ctx); lerr == nil && len(users) == 0 {
				return fmt.Errorf("%s (the database at %s has no accounts: is it the one `postline serve` uses? "+
					"Set --data-dir or --database-url)", e.Message, x.cfg.DatabaseLocation())
			}
		}
	}
	return err
}

// fieldText lists a validation error's problems once each, by the name the
// user typed.
func (x *inv) fieldText(e *apperr.Error) string {
	if len(e.Fields) == 0 {
		return e.Message
	}
	keys := make([]string, 0, len(e.Fields))
	for k := range e.Fields {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	parts := make([]string, 0, len(keys))
	for _, k := range keys {
		name := k
		if f, ok := x.fields[k]; ok {
			name = f
		}
		parts = append(parts, name+": "+strings.Join(e.Fields[k], ", "))
	}
	return strings.Join(parts, "; ")
}
