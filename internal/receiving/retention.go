package receiving

import (
	"context"
	"sync"
	"time"
)

// Pruner deletes stored messages past the retention in the background.
type Pruner struct {
	s    *Service
	stop context.CancelFunc
	wg   sync.WaitGroup
}

// NewPruner returns the Service's pruner; it runs once started.
func (s *Service) NewPruner() *Pruner { return &Pruner{s: s} }

// interval is how often a pass runs: a tenth of the retention, between a
// second and ten minutes, so that a message is gone within about a tenth
// past its time (and a short test retention is honoured quickly).
func (p *Pruner) interval() time.Duration {
	return min(max(p.s.cfg.Retention/10, time.Second), 10*time.Minute)
}

// Start runs a pass now and then every interval until Stop or ctx ends.
func (p *Pruner) Start(ctx context.Context) error {
	ctx, p.stop = context.WithCancel(ctx)
	p.wg.Add(1)
	go func() {
		defer p.wg.Done()
		t := time.NewTicker(p.interval())
		defer t.Stop()
		for {
			p.runOnce(ctx)
			select {
			case <-ctx.Done():
				return
			case <-t.C:
			}
		}
	}()
	return nil
}

func (p *Pruner) runOnce(ctx context.Context) {
	n, err := p.s.Prune(ctx)
	switch {
	case err != nil && ctx.Err() == nil:
		p.s.cfg.Logger.Warn("stored inbound messages: retention pass failed", "error", err)
	case n > 0:
		p.s.cfg.Logger.Info("stored inbound messages past the retention deleted", "messages", n, "retention", p.s.cfg.Retention)
	}
}

// Stop ends the background loop and waits for it.
func (p *Pruner) Stop() {
	if p.stop != nil {
		p.stop()
	}
	p.wg.Wait()
}
