package main

import (
	"context"
	"fmt"
	"net"

	"github.com/postline/postline/internal/account"
	"github.com/postline/postline/internal/app"
)

func cmdServe(ctx context.Context, e env, args []string) error {
	fs, l := flags(e, "serve")
	pos, cfg, err := parse(fs, l, args)
	if err != nil {
		return err
	}
	if len(pos) > 0 {
		return usagef("serve takes no arguments, got %q", pos)
	}
	log := app.NewLogger(cfg, e.stderr)
	a, err := app.Open(ctx, cfg, log, app.Options{})
	if err != nil {
		return err
	}
	defer a.Close()
	// First start on an empty database: make an account so that a newcomer
	// can call the API at once. Printed once; never again.
	if key, created, err := a.Accounts.Bootstrap(ctx); err != nil {
		return err
	} else if created {
		fmt.Fprintf(e.stdout, "Created account %q with API key (shown only now):\n  %s\n"+
			"Try: curl -u %s:%s http://%s/api/domains\n",
			account.BootstrapLogin, key, account.BootstrapLogin, key, cfg.Addr)
	}
	ln, err := net.Listen("tcp", cfg.Addr)
	if err != nil {
		return err
	}
	return a.Serve(ctx, ln)
}

func cmdMigrate(ctx context.Context, e env, args []string) error {
	fs, l := flags(e, "migrate")
	pos, cfg, err := parse(fs, l, args)
	if err != nil {
		return err
	}
	if len(pos) > 0 {
		return usagef("migrate takes no arguments")
	}
	a, err := openApp(ctx, e, cfg) // Open applies the migrations
	if err != nil {
		return err
	}
	defer a.Close()
	fmt.Fprintln(e.stdout, "database is up to date")
	return nil
}
