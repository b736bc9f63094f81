package app

import (
	"context"

	"github.com/postline/postline/internal/secret"
	"github.com/postline/postline/internal/store"
	"github.com/postline/postline/internal/webhook"
)

// openWebhooks builds the webhook service and its dispatcher (started by
// Serve only: the CLI never posts).
func (a *App) openWebhooks(box *secret.Box) {
	st := store.NewWebhooks(a.DB, box)
	a.Webhooks = webhook.NewService(st, nil)
	a.dispatcher = webhook.NewDispatcher(webhook.DispatcherConfig{AllowPrivate: a.Config.WebhookAllowPrivate, Logger: a.Logger,
		Resolver: a.Resolver, Metrics: webhook.NewMetrics(a.Registry), Headers: sendHeaders{a}},
		st, store.NewEvents(a.DB), func(ctx context.Context, id int64) (string, error) {
			d, err := a.Domains.ByID(ctx, id)
			return d.Name, err
		})
}

// sendHeaders gives the dispatcher the headers of accepted sends (the
// user variables of Mailgun-format posts); Sending is opened after the
// webhooks, so it is looked up when asked.
type sendHeaders struct{ a *App }

func (h sendHeaders) SendHeaders(ctx context.Context, domainID int64, ids []string) (map[string]map[string]string, error) {
	return h.a.Sending.SendHeaders(ctx, domainID, ids)
}
