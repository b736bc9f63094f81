package app

import (
	"cmp"
	"context"
	"crypto/tls"
	"os"
	"time"

	"github.com/postline/postline/internal/domain"
	"github.com/postline/postline/internal/inboundpost"
	"github.com/postline/postline/internal/mailforward"
	"github.com/postline/postline/internal/receiving"
	"github.com/postline/postline/internal/sending"
	"github.com/postline/postline/internal/store"
	"github.com/postline/postline/internal/tlscert"
)

// openReceiving builds the receiving side of inbound domains: what the
// inbound listener hands mail for them to, and what the API and console
// read stored messages from.
func (a *App) openReceiving() {
	cfg := a.Config
	posts := store.NewInboundPosts(a.DB)
	a.Receiving = receiving.NewService(receiving.Config{AuthservID: a.authservID(), Retention: cfg.InboundRetention,
		StoreBytesPerAccount: cfg.InboundStoreBytesPerAccount, ActionsPerMessage: cfg.InboundActionsPerMessage, Logger: a.Logger},
		receiving.Deps{Domains: a.Domains, Routes: a.Routes, Store: store.NewInboundMessages(a.DB), Resolver: a.Resolver, Events: a.Events,
			Forwarder: receiving.Forwarders{URL: inboundpost.NewOutbox(posts,
				inboundpost.OutboxConfig{MaxPendingBytes: cfg.InboundPostBytesPerAccount}), Address: a.addressForwarder()}})
	a.inboundPosts = inboundpost.NewDispatcher(inboundpost.Config{Timeout: cfg.InboundPostTimeout, RetryBase: cfg.InboundPostFirstRetry,
		RetryWindow: cfg.InboundPostRetryWindow, AllowPrivate: cfg.WebhookAllowPrivate, Resolver: a.Resolver,
		PublicURL: cfg.EffectivePublicURL(), Keep: cfg.InboundRetention, Logger: a.Logger, Metrics: inboundpost.NewMetrics(a.Registry)},
		inboundpost.Deps{Store: posts, Log: store.NewEvents(a.DB), Keys: a.Webhooks, Wake: a.Events.Wake,
			DomainName: func(ctx context.Context, id int64) (string, error) {
				d, err := a.Domains.ByID(ctx, id)
				return d.Name, err
			}})
}

// addressForwarder carries out routes' forward(address): through the
// sending intake's forward mode, signed by the receiving domain.
func (a *App) addressForwarder() receiving.Forwarder {
	return mailforward.New(mailforward.Config{MaxForwards: a.Config.InboundMaxForwards, Logger: a.Logger},
		mailforward.Deps{Domains: a.Domains, Intake: sendingIntake{a}, Resolver: a.Resolver})
}

// sendingIntake is a.Sending for the address forwarder, which is built
// before it (receiving comes before tracking, and tracking before
// sending); nothing is received before the server starts.
type sendingIntake struct{ a *App }

func (s sendingIntake) PrepareRaw(ctx context.Context, in sending.RawInput) (sending.RawPrepared, error) {
	return s.a.Sending.PrepareRaw(ctx, in)
}

func (s sendingIntake) AcceptRaw(ctx context.Context, d domain.Domain, accountID int64, m sending.RawMessage) (sending.Accepted, error) {
	return s.a.Sending.AcceptRaw(ctx, d, accountID, m)
}

func (s sendingIntake) Reserve(ctx context.Context, accountID int64, domain, key string) (string, int, []byte, error) {
	return s.a.Sending.Reserve(ctx, accountID, domain, key)
}

func (s sendingIntake) Remember(ctx context.Context, accountID int64, domain, key, claim string, status int, body []byte) error {
	return s.a.Sending.Remember(ctx, accountID, domain, key, claim, status, body)
}

func (s sendingIntake) Forget(ctx context.Context, accountID int64, domain, key, claim string) error {
	return s.a.Sending.Forget(ctx, accountID, domain, key, claim)
}

// authservID names this server in the Authentication-Results and Received
// fields of received mail: the MX host inbound domains publish, else the
// EHLO name, else the host name.
func (a *App) authservID() string {
	host, _ := os.Hostname()
	return cmp.Or(a.Config.EffectiveInboundMXHost(), a.Config.HeloName, host, "localhost")
}

// inboundLimit takes one message to an inbound domain from a client
// address's budget (--inbound-per-ip-per-minute; IPv6 by its /64). A
// counter that fails lets the message in: the listener's connection
// bounds still hold.
func (a *App) inboundLimit(ctx context.Context, ip string) bool {
	r, err := a.Limiter.Allow(ctx, "inbound:"+addressKey(ip), a.Config.InboundPerIPPerMinute, time.Minute)
	return err != nil || r.Allowed
}

// inboundTLS is the STARTTLS configuration of the inbound listener with
// --tls-cert and --tls-key, reloaded when the files change; nil without
// them (no STARTTLS offered).
func (a *App) inboundTLS() (*tls.Config, error) {
	if a.Config.TLSCert == "" {
		return nil, nil
	}
	certs, err := tlscert.New(a.Config.TLSCert, a.Config.TLSKey)
	if err != nil {
		return nil, err
	}
	certs.OnError = func(err error) {
		a.Logger.Error("new TLS certificate not loaded; the previous one stays", "error", err)
	}
	return certs.Config(), nil
}

// startInbound starts the inbound listener (when configured) with
// STARTTLS, the retention of stored messages and the dispatcher of
// routes' posts (forwards to URLs, store notifications); stop ends them.
func (a *App) startInbound(ctx context.Context) (stop func(), err error) {
	pruner := a.Receiving.NewPruner()
	if err := pruner.Start(ctx); err != nil {
		return nil, err
	}
	if err := a.inboundPosts.Start(ctx); err != nil {
		pruner.Stop()
		return nil, err
	}
	stopLoops := func() { a.inboundPosts.Stop(); pruner.Stop() }
	if a.Inbound == nil {
		return stopLoops, nil
	}
	tc, err := a.inboundTLS()
	if err != nil {
		stopLoops()
		return nil, err
	}
	a.Inbound.SetTLS(tc)
	if err := a.Inbound.Listen(a.Config.SMTPListen); err != nil {
		stopLoops()
		return nil, err
	}
	return func() {
		sctx, cancel := context.WithTimeout(context.Background(), a.Config.ShutdownTimeout)
		defer cancel()
		a.Inbound.Shutdown(sctx) //nolint:errcheck // shutting down anyway
		stopLoops()
	}, nil
}
