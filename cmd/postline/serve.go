package main

import (
	"context"
	"flag"
	"fmt"
	"log/slog"
	"net"
	"os"
	"runtime/pprof"
	"strconv"
	"strings"

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
		if x.cfg.CPUProfile != "" {
			stop, err := startCPUProfile(x.cfg.CPUProfile)
			if err != nil {
				return err
			}
			defer stop(log)
		}
		a, err := app.Open(ctx, x.cfg, log, app.Options{Command: "serve"})
		if err != nil {
			return err
		}
		defer a.Close()
		// First start on an empty database: make an account so that a
		// newcomer can call the API at once. Printed once; never again.
		key, created, err := a.Accounts.Bootstrap(ctx)
		if err != nil {
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
		if x.cfg.Console {
			fmt.Fprint(x.stdout, consoleLines(x.cfg, ln.Addr(), created))
		}
		return a.Serve(ctx, ln)
	}
}

// startCPUProfile profiles the process into path until the returned stop
// runs (serve's return, after SIGTERM's graceful stop).
func startCPUProfile(path string) (stop func(*slog.Logger), err error) {
	f, err := os.Create(path)
	if err != nil {
		return nil, fmt.Errorf("--cpu-profile: %w", err)
	}
	if err := pprof.StartCPUProfile(f); err != nil {
		f.Close()
		return nil, fmt.Errorf("--cpu-profile: %w", err)
	}
	return func(log *slog.Logger) {
		pprof.StopCPUProfile()
		if err := f.Close(); err != nil {
			log.Error("writing the CPU profile", "file", path, "error", err)
			return
		}
		log.Info("CPU profile written", "file", path)
	}, nil
}

// consoleLines say where the console answers and how to sign in to it.
func consoleLines(cfg config.Config, addr net.Addr, bootstrapped bool) string {
	how := "Sign in with your login and one of your API keys, or with a console password " +
		"(set one with: postline user password LOGIN)."
	if bootstrapped {
		how = "Sign in with the login " + account.BootstrapLogin + " and the API key above " +
			"(or set a console password with: postline user password " + account.BootstrapLogin + ")."
	}
	return fmt.Sprintf("Console: %s\n  %s\n", consoleURL(cfg, addr), how)
}

// consoleURL is the console's address: the public URL when one is set,
// else the listener's (a wildcard listener is reached on loopback here).
func consoleURL(cfg config.Config, addr net.Addr) string {
	if cfg.PublicURL != "" {
		return strings.TrimSuffix(cfg.PublicURL, "/") + "/"
	}
	scheme := "http"
	if cfg.APITLS {
		scheme = "https"
	}
	hostPort := addr.String()
	if tcp, ok := addr.(*net.TCPAddr); ok && tcp.IP.IsUnspecified() {
		hostPort = net.JoinHostPort("127.0.0.1", strconv.Itoa(tcp.Port))
	}
	return scheme + "://" + hostPort + "/"
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
