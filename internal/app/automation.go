package app

import (
	"context"

	"github.com/postline/postline/internal/sending"
	"github.com/postline/postline/internal/shaping"
)

// openAutomation makes the worker carry out the automation rules of the
// shaping in force, through the suspensions. It comes after the
// suspensions are open (openQueueControl).
func (a *App) openAutomation() {
	a.Automation = sending.NewAutomation(sending.AutomationConfig{Suspensions: a.Suspensions, Logger: a.Logger,
		Now: a.opts.Now, Registry: a.Registry})
	a.Worker.UseAutomation(a.Automation)
}

// shapingOverrides is delivery's Config.Overrides: the limits automation
// rules override for a site now. The transport exists before the
// automation, which it reads once it does.
func (a *App) shapingOverrides(ctx context.Context, site string) shaping.Limits {
	if a.Automation == nil {
		return shaping.Limits{}
	}
	return a.Automation.Overrides(ctx, site)
}

// watchAutomation logs the end of every automation action until ctx ends
// or the app closes.
func (a *App) watchAutomation(ctx context.Context) {
	ctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		a.Automation.Watch(ctx)
	}()
	a.closers = append(a.closers, func() error { cancel(); <-done; return nil })
}
