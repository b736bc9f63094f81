package sending

import (
	"context"
	"errors"
	"fmt"
	"runtime/debug"
	"sync"
	"time"

	"github.com/postline/postline/internal/delivery"
	"github.com/postline/postline/internal/domain"
	"github.com/postline/postline/internal/event"
)

// safeAttemptGroup is safeAttempt for a unit of deliveries that share one
// transaction: a panic fails each of them with reason internal_error.
func (w *Worker) safeAttemptGroup(ctx context.Context, unit []claimed) {
	t0 := time.Now()
	defer func() {
		w.noteAttempt(time.Since(t0))
		if r := recover(); r != nil {
			w.cfg.Logger.Error("delivery attempt panicked; failing the deliveries", "delivery", unit[0].d.ID, "count", len(unit),
				"panic", r, "stack", string(debug.Stack()))
			w.eachDelivery(ctx, unit, func(c claimed) {
				d := c.d
				w.finish(ctx, d, Outcome{State: StateFailed, Message: "internal error"}, []event.Entry{
					deliveryEntry(d, event.Failed, w.cfg.Now(), map[string]any{"reason": "internal_error", "attempt": d.Attempts})}, nil)
			})
		}
	}()
	w.attemptGroup(ctx, unit)
}

// eachDelivery records the outcome of every delivery of unit (fn calls
// finish) at once, so that they join one group commit
// (groupcommit_complete.go) rather than wait for one commit each. The unit's
// attempt slot moves to an outcome slot first, once, here: the slot
// belongs to this goroutine (slots.go).
func (w *Worker) eachDelivery(ctx context.Context, unit []claimed, fn func(c claimed)) {
	slotOf(ctx).record()
	var wg sync.WaitGroup
	for _, c := range unit {
		wg.Go(func() {
			defer func() {
				// As safeAttempt: a bug must not take the process down
				// (its lease expires and the attempt repeats).
				if r := recover(); r != nil {
					w.cfg.Logger.Error("recording a delivery outcome panicked", "delivery", c.d.ID, "panic", r,
						"stack", string(debug.Stack()))
				}
			}()
			fn(c)
		})
	}
	wg.Wait()
}

// attemptGroup is attempt for deliveries of one message that is the same
// for each (grouping.go), at one site: the checks of each delivery, one
// admission, one build and signature, one transaction with a RCPT per
// recipient, and each delivery's own outcome. Every delivery keeps its
// lease until its outcome is recorded.
func (w *Worker) attemptGroup(ctx context.Context, unit []claimed) {
	for _, c := range unit {
		stop := w.keepLease(ctx, c.d.ID)
		defer stop()
	}
	dom := unit[0].pre.dom // grouped only when prefetch loaded it
	if err := dom.CheckReadable(); err != nil {
		w.eachDelivery(ctx, unit, func(c claimed) { w.retryLater(ctx, c.d, fmt.Errorf("loading domain: %w", err)) })
		return
	}
	unit = w.dropUnsendable(ctx, dom, unit)
	if len(unit) == 0 {
		return
	}
	first := unit[0].d
	tk, wait, err := w.transport.Admit(ctx, route(dom), first.Recipient)
	if err == nil && tk == nil {
		w.releaseAll(ctx, unit, w.cfg.Now().Add(wait)) // its site is at a limit: not an attempt
		return
	}
	started := w.cfg.Now()
	if err != nil {
		w.recordAll(ctx, dom, unit, started, err)
		return
	}
	if f, ok := w.siblingsOf(ctx, unit[0]); ok {
		w.limits.set(f, tk.MaxRecipients())
	}
	if n := tk.MaxRecipients(); len(unit) > n {
		// Grouped under a larger limit than the site's now: the rest
		// waits for the next claim, not an attempt.
		w.releaseAll(ctx, unit[n:], w.cfg.Now())
		unit = unit[:n]
	}
	if unit = w.withinDomainRate(ctx, unit); len(unit) == 0 {
		tk.Release()
		return
	}
	msg, forward, err := w.build(ctx, dom, unit[0].d)
	if err != nil {
		tk.Release()
		if ctx.Err() != nil {
			return // stopping: the leases expire and the deliveries are retried, not failed
		}
		reason := "build_failed"
		if errors.Is(err, errAttachments) {
			reason = "attachment_processing_failed"
		}
		w.eachDelivery(ctx, unit, func(c claimed) {
			d := c.d
			a := attemptRun{d: d, mode: dom.Delivery.Mode, started: started}
			w.finish(ctx, d, Outcome{State: StateFailed, Message: err.Error()}, []event.Entry{a.sendEntry(),
				deliveryEntry(d, event.Failed, w.cfg.Now(), map[string]any{"reason": reason, "error": err.Error(), "attempt": d.Attempts})}, nil)
		})
		return
	}
	from := w.envelopeFrom(dom, unit[0].d, forward) // the same for each: no VERP here (sharedCopyBlocker)
	to := make([]string, len(unit))
	for i, c := range unit {
		to[i] = c.d.Recipient
	}
	if tk.Waits() {
		h := slotOf(ctx)
		h.wait()
		ctx = delivery.WithTurn(ctx, h.resume)
	}
	t0 := time.Now()
	outs := w.group.SendTicketAll(ctx, tk, from, to, msg)
	tried, triedOuts := unit[:0:0], outs[:0:0]
	for i, o := range outs {
		if e, ok := o.Err.(*delivery.Error); ok && e.Wait > 0 {
			w.release(ctx, unit[i].d, w.cfg.Now().Add(e.Wait)) // its turn did not come: not an attempt
			continue
		}
		tried, triedOuts = append(tried, unit[i]), append(triedOuts, o)
	}
	if len(tried) == 0 {
		return
	}
	took := time.Since(t0)
	w.eachOutcome(ctx, dom, tried, started, triedOuts, took)
	w.reactAll(ctx, tk, dom.AccountID, triedOuts)
}

// dropUnsendable finishes or puts back the deliveries of unit that must
// not be sent now (suppressed, a failed suppression check, a suspended
// site) and returns the others. The unit keeps its attempt slot: the
// others are still to be sent.
func (w *Worker) dropUnsendable(ctx context.Context, dom domain.Domain, unit []claimed) []claimed {
	held := withSlot(ctx, nil)
	var keep []claimed
	for _, c := range unit {
		d := c.d
		v, err := c.pre.verdict, error(nil)
		if !c.pre.checked {
			v, err = w.supp.Check(ctx, d.DomainID, d.Recipient)
		}
		switch {
		case err != nil:
			w.retryLater(held, d, fmt.Errorf("suppression check: %w", err))
		case v.Suppressed:
			w.finish(held, d, Outcome{State: StateFailed, Message: "suppressed"}, []event.Entry{
				deliveryEntry(d, event.Failed, w.cfg.Now(), map[string]any{"reason": "suppressed", "suppression": string(v.By.Type), "attempt": d.Attempts})}, nil)
		case w.holdSuspended(ctx, dom, d):
		default:
			keep = append(keep, c)
		}
	}
	return keep
}

// withinDomainRate takes each delivery's place under the domain's rate
// (DomainRate counts recipients: each is a message of the tenant's log)
// and puts back those over it; it returns the others.
func (w *Worker) withinDomainRate(ctx context.Context, unit []claimed) []claimed {
	if w.cfg.DomainRate <= 0 || w.limiter == nil {
		return unit
	}
	var keep []claimed
	for _, c := range unit {
		res, err := w.limiter.Allow(ctx, fmt.Sprintf("send:%d", c.d.DomainID), w.cfg.DomainRate, time.Minute)
		if err == nil && !res.Allowed {
			w.release(ctx, c.d, res.Reset)
			continue
		}
		keep = append(keep, c)
	}
	return keep
}

// releaseAll gives unit back to the queue, due at next, as release does.
func (w *Worker) releaseAll(ctx context.Context, unit []claimed, next time.Time) {
	for _, c := range unit {
		w.release(ctx, c.d, next)
	}
}

// recordAll records err, an attempt's failure before any transaction, as
// each delivery's outcome.
func (w *Worker) recordAll(ctx context.Context, dom domain.Domain, unit []claimed, started time.Time, err error) {
	w.eachDelivery(ctx, unit, func(c claimed) {
		w.record(ctx, attemptRun{d: c.d, mode: dom.Delivery.Mode, started: started}, delivery.Result{}, err)
	})
}

// eachOutcome records each delivery's own outcome of the transaction.
func (w *Worker) eachOutcome(ctx context.Context, dom domain.Domain, unit []claimed, started time.Time, outs []delivery.Outcome, took time.Duration) {
	for range unit {
		w.cfg.Metrics.attempted(dom.Delivery.Mode, took)
	}
	i := map[int64]int{}
	for k, c := range unit {
		i[c.d.ID] = k
	}
	w.eachDelivery(ctx, unit, func(c claimed) {
		o := outs[i[c.d.ID]]
		w.record(ctx, attemptRun{d: c.d, mode: dom.Delivery.Mode, started: started}, o.Result, o.Err)
	})
}

// reactAll shows the automation rules each reply of the transaction once:
// each refused RCPT's, and the one that ended it (DATA's, or the failure
// every other recipient shares).
func (w *Worker) reactAll(ctx context.Context, tk *delivery.Ticket, accountID int64, outs []delivery.Outcome) {
	seen := map[error]bool{}
	delivered := false
	for _, o := range outs {
		switch {
		case o.Err == nil && !delivered:
			delivered = true
			w.react(ctx, tk, accountID, o.Result, nil)
		case o.Err != nil && !seen[o.Err]:
			seen[o.Err] = true
			w.react(ctx, tk, accountID, delivery.Result{}, o.Err)
		}
	}
}
