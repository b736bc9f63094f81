package sending

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/postline/postline/internal/apperr"
	"github.com/postline/postline/internal/background"
	"github.com/postline/postline/internal/delivery"
	"github.com/postline/postline/internal/domain"
	"github.com/postline/postline/internal/event"
	"github.com/postline/postline/internal/suppression"
)

// attempt makes one delivery attempt and records its outcome. pre holds
// what prefetch learned for the whole claim.
func (w *Worker) attempt(ctx context.Context, d Delivery, pre prefetched) {
	stop := w.keepLease(ctx, d.ID)
	defer stop()
	dom, err := pre.dom, error(nil)
	if !pre.loaded {
		dom, err = w.domains.ByID(ctx, d.DomainID)
	}
	if apperr.CodeOf(err) == apperr.NotFound {
		w.finish(ctx, d, Outcome{State: StateFailed, Message: "domain removed"}, []event.Entry{
			deliveryEntry(d, event.Failed, w.cfg.Now(), map[string]any{"reason": "domain_removed", "attempt": d.Attempts})}, nil)
		return
	}
	if err == nil {
		err = dom.CheckReadable() // retried: the operator may restart with the right key
	}
	if err != nil {
		w.retryLater(ctx, d, fmt.Errorf("loading domain: %w", err))
		return
	}
	v, err := pre.verdict, error(nil)
	if !pre.checked {
		v, err = w.supp.Check(ctx, d.DomainID, d.Recipient)
	}
	if err != nil {
		w.retryLater(ctx, d, fmt.Errorf("suppression check: %w", err))
		return
	} else if v.Suppressed {
		w.finish(ctx, d, Outcome{State: StateFailed, Message: "suppressed"}, []event.Entry{
			deliveryEntry(d, event.Failed, w.cfg.Now(), map[string]any{"reason": "suppressed", "suppression": string(v.By.Type), "attempt": d.Attempts})}, nil)
		return
	}
	if w.holdSuspended(ctx, dom, d) {
		return
	}
	tk, wait, err := w.transport.Admit(ctx, route(dom), d.Recipient)
	if err == nil && tk == nil {
		w.release(ctx, d, w.cfg.Now().Add(wait)) // its site is at a limit: not an attempt
		return
	}
	a := attemptRun{d: d, mode: dom.Delivery.Mode, started: w.cfg.Now()}
	if err != nil { // no next hop (DNS), or its site is backed off: an attempt that failed
		w.record(ctx, a, delivery.Result{}, err)
		return
	}
	if w.cfg.DomainRate > 0 && w.limiter != nil {
		res, err := w.limiter.Allow(ctx, fmt.Sprintf("send:%d", d.DomainID), w.cfg.DomainRate, time.Minute)
		if err == nil && !res.Allowed {
			tk.Release()
			w.release(ctx, d, res.Reset)
			return
		}
	}
	msg, forward, err := w.build(ctx, dom, d)
	if err != nil {
		tk.Release()
		if ctx.Err() != nil {
			return // stopping: the lease expires and the delivery is retried, not failed
		}
		reason := "build_failed"
		if errors.Is(err, errAttachments) {
			reason = "attachment_processing_failed"
		}
		w.finish(ctx, d, Outcome{State: StateFailed, Message: err.Error()}, []event.Entry{a.sendEntry(),
			deliveryEntry(d, event.Failed, w.cfg.Now(), map[string]any{"reason": reason, "error": err.Error(), "attempt": d.Attempts})}, nil)
		return
	}
	env := delivery.Envelope{From: w.envelopeFrom(dom, d, forward), To: d.Recipient}
	if tk.Waits() {
		// Its turn under the site's limits is not work: the next attempt
		// may build meanwhile, and this one takes a slot again to send.
		h := slotOf(ctx)
		h.wait()
		ctx = delivery.WithTurn(ctx, h.resume)
	}
	started := time.Now()
	res, err := w.transport.SendTicket(ctx, tk, env, msg)
	if e, ok := err.(*delivery.Error); ok && e.Wait > 0 {
		w.release(ctx, d, w.cfg.Now().Add(e.Wait)) // its turn did not come: not an attempt
		return
	}
	w.cfg.Metrics.attempted(dom.Delivery.Mode, time.Since(started))
	w.record(ctx, a, res, err)
	w.react(ctx, tk, dom.AccountID, res, err) // after: a rule firing does not delay the outcome

}

// attemptRun is an attempt under way: the delivery, its transport and
// when it started (admitted by the transport).
type attemptRun struct {
	d       Delivery
	mode    string
	started time.Time
}

// sendEntry is the attempt's `send` entry, stamped when it started and
// written with its outcome.
func (a attemptRun) sendEntry() event.Entry {
	return deliveryEntry(a.d, event.Send, a.started, map[string]any{"attempt": a.d.Attempts})
}

// release gives a claimed delivery back to the queue, due at next,
// without counting an attempt or recording anything: it waited for its
// turn (a rate, a site's limits) and was never tried. The claim loop
// looks for it again when it comes due.
func (w *Worker) release(ctx context.Context, d Delivery, next time.Time) {
	if err := w.store.Release(ctx, d.ID, w.owner, next); err != nil {
		w.cfg.Logger.Warn("releasing a delivery that waits for its turn", "delivery", d.ID, "error", err)
		return
	}
	w.alarm.set(next)
}

// tlsDetails is a TLS outcome as the log entry's details.tls:
// {"version": "TLS1.3" or null, "verified": bool, "policy": "none",
// "mta-sts" or "dane"}, with "report" when an MTA-STS policy in testing
// mode would have refused.
func tlsDetails(o delivery.TLSOutcome) map[string]any {
	m := map[string]any{"version": nil, "verified": o.Verified, "policy": cmp.Or(o.Policy, delivery.PolicyNone)}
	if o.Version != "" {
		m["version"] = o.Version
	}
	if o.Report != "" {
		m["report"] = o.Report
	}
	return m
}

func route(d domain.Domain) delivery.Route {
	return delivery.Route{Mode: d.Delivery.Mode, Host: d.Delivery.Host, Port: d.Delivery.Port, User: d.Delivery.User,
		Password: d.Delivery.Password, TLS: d.Delivery.TLS, Pool: d.EgressPool()}
}

// record turns the transport's answer into the delivery's next state and
// its log entries, after the attempt's `send` entry.
func (w *Worker) record(ctx context.Context, a attemptRun, res delivery.Result, err error) {
	d, transport, now := a.d, a.mode, w.cfg.Now()
	if err == nil {
		w.finish(ctx, d, Outcome{Transport: transport, TLS: res.TLS.Label(), State: StateDelivered, Code: res.Code, Message: res.Message}, []event.Entry{
			a.sendEntry(), deliveryEntry(d, event.Delivered, now, map[string]any{"smtp_code": res.Code, "enhanced_code": res.Enhanced,
				"smtp_message": res.Message, "mx_host": res.Host, "attempt": d.Attempts, "tls": tlsDetails(res.TLS),
				"source": res.Source, "source_address": res.SourceAddress})}, nil)
		return
	}
	e := delivery.Classify(err)
	tlsLabel := e.TLS.Label()
	if e.Code == 0 && e.Err != nil {
		// The tenant's entry says the class of failure; the addresses and
		// ports the cause names are the operator's to read.
		w.cfg.Logger.Info("delivery attempt failed", "delivery", d.ID, "host", e.Host, "stage", e.Stage,
			"temporary", e.Temporary, "error", e.Err)
	}
	details := map[string]any{"smtp_code": e.Code, "enhanced_code": e.Enhanced, "smtp_message": e.Message,
		"mx_host": e.Host, "stage": e.Stage, "attempt": d.Attempts, "tls": tlsDetails(e.TLS),
		"source": e.Source, "source_address": e.SourceAddress}
	if e.Temporary {
		fail := deliveryEntry(d, event.TemporaryFail, now, details)
		next, ok := w.cfg.Policy.Next(d.Since(), now, d.Attempts, e.RetryAfter())
		if !ok {
			w.finish(ctx, d, Outcome{Transport: transport, TLS: tlsLabel, State: StateFailed, Code: e.Code, Message: e.Message}, []event.Entry{a.sendEntry(), fail,
				deliveryEntry(d, event.Failed, now, map[string]any{"reason": "max_age_exceeded", "attempt": d.Attempts})}, nil)
			return
		}
		w.finish(ctx, d, Outcome{Transport: transport, TLS: tlsLabel, State: StateDeferred, NextAttemptAt: next, Code: e.Code, Message: e.Message}, []event.Entry{a.sendEntry(), fail,
			deliveryEntry(d, event.Deferred, now, map[string]any{"next_attempt_at": next.UTC().Format(time.RFC3339Nano), "attempt": d.Attempts})}, nil)
		return
	}
	perm := deliveryEntry(d, event.PermanentFail, now, details)
	if e.RecipientRejected() {
		bounce := &suppression.Entry{DomainID: d.DomainID, Type: suppression.Bounce, RecipientType: suppression.Email,
			Recipient: strings.ToLower(d.Recipient), CreatedAt: now}
		src := "bounce:" + strings.TrimSpace(e.Enhanced)
		if e.Enhanced == "" {
			src = fmt.Sprintf("bounce:%d", e.Code)
		}
		bounce.Source = &src
		bounce.Description = suppression.BounceReason(event.Reply{Code: e.Code, Enhanced: e.Enhanced, Text: e.Message}.String())
		w.finish(ctx, d, Outcome{Transport: transport, TLS: tlsLabel, State: StateBounced, Code: e.Code, Message: e.Message}, []event.Entry{a.sendEntry(), perm,
			deliveryEntry(d, event.Bounced, now, details)}, bounce)
		return
	}
	w.finish(ctx, d, Outcome{Transport: transport, TLS: tlsLabel, State: StateFailed, Code: e.Code, Message: e.Message}, []event.Entry{a.sendEntry(), perm,
		deliveryEntry(d, event.Failed, now, map[string]any{"reason": "permanent_failure", "attempt": d.Attempts})}, nil)
}

// retryLater defers a delivery after a problem on our side (database,
// configuration), on the normal schedule.
func (w *Worker) retryLater(ctx context.Context, d Delivery, cause error) {
	w.cfg.Logger.Warn("delivery attempt could not run", "delivery", d.ID, "error", cause)
	now := w.cfg.Now()
	next, ok := w.cfg.Policy.Next(d.Since(), now, d.Attempts, 0)
	if !ok {
		w.finish(ctx, d, Outcome{State: StateFailed, Message: cause.Error()}, []event.Entry{
			deliveryEntry(d, event.Failed, now, map[string]any{"reason": "max_age_exceeded", "attempt": d.Attempts})}, nil)
		return
	}
	w.finish(ctx, d, Outcome{State: StateDeferred, NextAttemptAt: next, Message: cause.Error()}, []event.Entry{
		deliveryEntry(d, event.Deferred, now, map[string]any{"next_attempt_at": next.UTC().Format(time.RFC3339Nano), "reason": "internal", "attempt": d.Attempts})}, nil)
}

func (w *Worker) finish(ctx context.Context, d Delivery, o Outcome, entries []event.Entry, bounce *suppression.Entry) {
	transport := o.Transport
	if transport == "" {
		transport = "none"
	}
	w.cfg.Metrics.outcome(o.State, transport, cmp.Or(o.TLS, "none"))
	slotOf(ctx).record() // the next attempt may start while this outcome waits for its commit
	held, err := w.complete(ctx, Completion{ID: d.ID, Outcome: o, Entries: entries, Bounce: bounce})
	if err != nil {
		w.cfg.Logger.Error("recording delivery outcome failed; the lease will expire and the attempt repeat",
			"delivery", d.ID, "error", err)
		return
	}
	if !held {
		w.cfg.Logger.Warn("delivery lease lost before the outcome was recorded", "delivery", d.ID, "state", o.State)
		return
	}
	w.events.Wake(d.DomainID)
	if o.State == StateDeferred {
		w.Wake()
	}
}

// keepLease renews the lease while an attempt runs (a 25 MiB message to
// a slow server can outlast one lease).
func (w *Worker) keepLease(ctx context.Context, id int64) (stop func()) {
	ctx, cancel := context.WithCancel(ctx)
	go background.Every(ctx, w.cfg.Lease/3, func(ctx context.Context) bool {
		if err := w.store.ExtendLease(ctx, id, w.owner, w.cfg.Now().Add(w.cfg.Lease)); err != nil && ctx.Err() == nil {
			w.cfg.Logger.Warn("extending lease failed", "delivery", id, "error", err)
		}
		return false
	})
	return cancel
}
