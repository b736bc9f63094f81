package main

import (
	"context"
	"flag"
	"fmt"
	"log/slog"
	"net"

	"github.com/postline/postline/internal/account"
	"github.com/postline/postline/internal/app"
	"github.com/postline/postline/internal/config"
)

func setupServe(*flag.FlagSet) runFunc {
	return func(ctx context.Context, x *inv) error {
		log := app.NewLogger(x.cfg, x.stderr)
		// The first line says which database this is, so an operator who
		// started it from another directory sees it at once.
		log.Info("starting postline", "version", versionText(), "database", x.cfg.DatabaseLocation(), "data_dir", x.cfg.DataDir)
		logOpenFiles(log, x.cfg)
		a, err := app.Open(ctx, x.cfg, log, app.Options{Command: "serve"})
		if err != nil {
			return err
		}
		defer a.Close()
		// First start on an empty database: make an account so that a
		// newcomer can call the API at once. Printed once; never again.
		if key, created, err := a.Accounts.Bootstrap(ctx); err != nil {
			return err
		} else if created {
			fmt.Fprintf(x.stdout, "Created account %q with API key (shown only now):\n  %s\n"+
				"Try: curl -u %s:%s http://%s/api/domains\n",
				account.BootstrapLogin, key, account.BootstrapLogin, key, x.cfg.Addr)
		}
		ln, err := net.Listen("tcp", x.cfg.Addr)
		if err != nil {
			return err
		}
		return a.Serve(ctx, ln)
	}
}

func setupMigrate(*flag.FlagSet) runFunc {
	return func(ctx context.Context, x *inv) error {
		if _, err := x.appCreate(ctx); err != nil { // Open applies the migrations
			return err
		}
		fmt.Fprintf(x.stdout, "database %s is up to date\n", x.cfg.DatabaseLocation())
		return nil
	}
}

// logOpenFiles raises the open-file limit and says what it is, warning
// when the listeners' bounds together could reach it: an accept that fails
// for lack of file handles takes the API down with the SMTP ports.
func logOpenFiles(log *slog.Logger, cfg config.Config) {
	soft, hard, err := raiseOpenFiles()
	if err != nil {
		log.Warn("open-file limit unknown", "error", err)
		return
	}
	log.Info("open-file limit", "soft", soft, "hard", hard)
	need := uint64(cfg.HTTPMaxConnections) + openFilesReserve
	for _, addr := range []string{cfg.SMTPListen, cfg.SubmissionListen, cfg.SubmissionsListen} {
		if addr != "" {
			need += uint64(cfg.SMTPMaxConnections)
		}
	}
	if soft < need {
		log.Warn("the open-file limit is below what the listeners may hold; lower --smtp-max-connections "+
			"and --http-max-connections or raise the limit (ulimit -n, LimitNOFILE=)", "soft", soft, "need", need)
	}
}

// openFilesReserve is for what is not a client connection: the database,
// its WAL, DNS, outgoing SMTP, webhooks, log files.
const openFilesReserve = 256
