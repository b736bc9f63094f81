package app

import (
	"net/http"
	"strings"

	"github.com/postline/postline/internal/account"
	"github.com/postline/postline/internal/console"
	"github.com/postline/postline/internal/ratelimit"
	"github.com/postline/postline/internal/stats"
	"github.com/postline/postline/internal/store"
)

// console builds the web console, or returns nil when --console=false.
func (a *App) console() http.Handler {
	if !a.Config.Console {
		return nil
	}
	c, err := console.New(console.Config{
		SecureCookies:     a.Config.APITLS || strings.HasPrefix(a.Config.EffectivePublicURL(), "https://"),
		Logger:            a.Logger,
		ValidationPerHour: a.Config.RateValidationPerHour,
		DomainPerMinute:   a.Config.RateDomainPerMinute,
		PublicURL:         a.Config.PublicURL,
	}, console.Deps{
		Accounts:      a.Accounts,
		Team:          a.Team,
		Audit:         a.Audit,
		Sessions:      account.NewSessions(store.NewSessions(a.DB), a.Config.ConsoleIdleTimeout, nil),
		Domains:       a.Domains,
		Events:        a.Events,
		LogExports:    a.LogExports,
		Suppressions:  a.Suppressions,
		Webhooks:      a.Webhooks,
		WebhookTester: a.dispatcher,
		Templates:     a.Templates,
		Sending:       a.Sending,
		Queue:         a.Queue,
		Validator:     a.Validator,
		Limiter:       a.Limiter,
		Series:        store.NewEvents(a.DB),
		Stats:         stats.NewService(store.NewStats(a.DB)),
		Jobs:          a.ValidationJobs,
		Attempts:      &ratelimit.Attempts{Limiter: a.Limiter, PerLogin: a.Config.AuthAttemptsPerLogin, PerAddress: a.Config.AuthAttemptsPerAddress},
		Receiving:     a.Receiving,
		Copies:        a.copies,
	})
	if err != nil { // embedded templates: a build error, caught by every test
		panic(err)
	}
	return c
}
