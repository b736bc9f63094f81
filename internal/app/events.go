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
	p := event.NewPruner(store.NewEvents(a.DB), event.PrunerConfig{Retention: a.Config.LogRetention, Logger: a.Logger,
		Also: []event.PruneFunc{store.NewAudit(a.DB).PruneAudit}}) // the audit log: the log's retention
	if err := p.Start(ctx); err != nil {
		l.Stop()
		return nil, err
	}
	return func() { p.Stop(); l.Stop() }, nil
}
