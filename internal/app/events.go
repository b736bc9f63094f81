package app

import (
	"context"

	"github.com/postline/postline/internal/event"
	"github.com/postline/postline/internal/store"
)

// startEventServices starts what the delivery log needs while serving:
// retention, and on PostgreSQL the listener that wakes this process's log
// followers for entries recorded by any process. Management commands open
// the same App without them.
func (a *App) startEventServices(ctx context.Context) (stop func(), err error) {
	l := store.NewEventListener(a.DB, a.Events.Wake, a.Events.WakeAll, a.Logger)
	if err := l.Start(ctx); err != nil {
		return nil, err
	}
	p := a.logPruner()
	if err := p.Start(ctx); err != nil {
		l.Stop()
		return nil, err
	}
	return func() { p.Stop(); l.Stop() }, nil
}

// logPruner is the log's retention: its entries, and the content of the
// sent messages they are about, kept as long as they are.
func (a *App) logPruner() *event.Pruner {
	return event.NewPruner(store.NewEvents(a.DB), event.PrunerConfig{Retention: a.Config.LogRetention, Logger: a.Logger,
		Now: a.opts.Now, Also: []event.PruneFunc{a.Sending.PruneContent, store.NewAudit(a.DB).PruneAudit}})
}

// PruneLog runs one pass of the log's retention now, as serve does every
// ten minutes.
func (a *App) PruneLog(ctx context.Context) (int64, error) { return a.logPruner().RunOnce(ctx) }
