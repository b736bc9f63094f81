package app

import (
	"context"
	"fmt"
	"time"

	"github.com/postline/postline/internal/config"
	"github.com/postline/postline/internal/ratelimit"
	"github.com/postline/postline/internal/submission"
	"github.com/postline/postline/internal/tlscert"
)

// startSubmission starts the SMTP submission listeners that are
// configured and returns their stop function (nil when none is).
func (a *App) startSubmission() (stop func(), err error) {
	cfg := a.Config
	if cfg.SubmissionListen == "" && cfg.SubmissionsListen == "" {
		return nil, nil
	}
	certFile, keyFile := cfg.TLSCert, cfg.TLSKey
	if certFile == "" {
		for _, addr := range []string{cfg.SubmissionListen, cfg.SubmissionsListen} {
			if addr != "" && !config.IsLoopback(addr) {
				return nil, fmt.Errorf("submission-listen: %s is not loopback: SMTP submission needs --tls-cert and --tls-key", addr)
			}
		}
		if certFile, keyFile, err = tlscert.LoopbackPair(cfg.DataDir); err != nil {
			return nil, fmt.Errorf("submission: self-signed certificate: %w", err)
		}
		a.Logger.Warn("SMTP submission uses a self-signed certificate (loopback only); set --tls-cert and --tls-key for clients elsewhere",
			"cert", certFile)
	}
	certs, err := tlscert.New(certFile, keyFile)
	if err != nil {
		return nil, err
	}
	certs.OnError = func(err error) {
		a.Logger.Error("new TLS certificate not loaded; the previous one stays", "error", err)
	}
	a.Submission = submission.New(submission.Config{
		Hostname: cfg.HeloName, MaxMessageBytes: cfg.SubmissionMaxBytes, AllowInsecureAuth: cfg.SubmissionAllowPlainAuth,
		TLS: certs.Config(), Logger: a.Logger, Registerer: a.Registry, DomainPerMinute: cfg.RateDomainPerMinute,
		Conns: a.smtpConns(), SessionsPerAccount: cfg.SubmissionSessionsPerAccount, Spool: a.Spool,
	}, submission.Deps{Accounts: a.Accounts, Domains: a.Domains, Intake: a.Sending, Limiter: a.Limiter,
		Attempts: &ratelimit.Attempts{Limiter: a.Limiter, PerLogin: cfg.AuthAttemptsPerLogin, PerAddress: cfg.AuthAttemptsPerAddress}})
	for _, l := range []struct {
		addr     string
		implicit bool
	}{{cfg.SubmissionListen, false}, {cfg.SubmissionsListen, true}} {
		if l.addr == "" {
			continue
		}
		if err := a.Submission.Listen(l.addr, l.implicit); err != nil {
			a.Submission.Shutdown(context.Background()) //nolint:errcheck // failing anyway
			return nil, err
		}
	}
	return func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Duration(float64(cfg.ShutdownTimeout)))
		defer cancel()
		a.Submission.Shutdown(ctx) //nolint:errcheck // shutting down anyway
	}, nil
}
