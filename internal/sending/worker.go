package sending

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"log/slog"
	"os"
	"runtime/debug"
	"sync"
	"sync/atomic"
	"time"

	"github.com/postline/postline/internal/attach"
	"github.com/postline/postline/internal/delivery"
	"github.com/postline/postline/internal/domain"
	"github.com/postline/postline/internal/event"
	"github.com/postline/postline/internal/ratelimit"
	"github.com/postline/postline/internal/suppression"
	"github.com/postline/postline/internal/tracking"
)

// Transport hands one message to the next hop (delivery.Transport). Admit
// says, without waiting, whether a delivery may start now under its
// egress path's limits: a Ticket for SendTicket, or how long to wait (no
// attempt), or the error of an attempt that failed before any connection.
type Transport interface {
	Admit(ctx context.Context, r delivery.Route, recipient string) (*delivery.Ticket, time.Duration, error)
	SendTicket(ctx context.Context, tk *delivery.Ticket, env delivery.Envelope, msg []byte) (delivery.Result, error)
}

// WorkerConfig configures the Worker. Zero values take the defaults.
type WorkerConfig struct {
	Concurrency int           // attempts at once (default 8)
	Lease       time.Duration // how long a claim holds without renewal (default 2m)
	Poll        time.Duration // how often to look for due rows when not woken (default 1s)
	DomainRate  int           // messages per minute per domain; 0 = unlimited
	Grace       time.Duration // how long Stop lets attempts finish (default 10s)
	// Sealer opens the attachment options the Service sealed.
	Sealer Sealer
	// Process processes a send's attachments (watermarks, archives); nil
	// runs attach.Process in this process. The server passes a child
	// process runner (internal/attachproc) so a hostile file cannot take
	// it down.
	Process func(ctx context.Context, files []attach.File, opts attach.Options) (attach.Result, error)
	// Metrics counts outcomes and times attempts; nil counts nothing.
	Metrics *Metrics
	Policy  Policy
	VERPKey []byte // signs bounce addresses (authentication domains, forwards)
	// Tracking, when set, adds the domain's open, click and unsubscribe
	// tracking to each message.
	Tracking *tracking.URLs
	Now      func() time.Time
	Logger   *slog.Logger
}

// Worker drains the queue: claims due deliveries and attempts them.
type Worker struct {
	cfg       WorkerConfig
	store     Store
	events    *event.Service
	domains   *domain.Service
	supp      *suppression.Service
	transport Transport
	limiter   *ratelimit.Limiter
	owner     string
	wakeCh    chan struct{}
	alarm     alarm // wakes the claim loop when a released delivery comes due
	sends     *sendCache
	signers   signerCache
	heavy     chan struct{}             // attachment processing at once (decoded images, PDFs)
	completes *groupCommit[*completion] // group commit of outcomes (groupcommit_complete.go)
	holds     *Holds                    // operator suspensions (hold.go); nil: none
	auto      *Automation               // automation rules' actions (automation.go); nil: none
	group     GroupTransport            // transport when it can send to several recipients at once; nil: it cannot
	limits    rcptLimits                // max_recipients_per_transaction by site, as last admitted (grouping.go)

	// attemptEWMA is the moving mean of attempt durations (ns); it starts
	// at 0, and a few slow attempts lift it past quickAttempt.
	attemptEWMA atomic.Int64

	stop     context.CancelFunc
	attempts context.CancelFunc
	wg       sync.WaitGroup
}

// NewWorker returns a Worker; limiter may be nil when DomainRate is 0.
func NewWorker(cfg WorkerConfig, st Store, events *event.Service, domains *domain.Service, supp *suppression.Service,
	t Transport, limiter *ratelimit.Limiter) *Worker {
	if cfg.Concurrency <= 0 {
		cfg.Concurrency = 8
	}
	if cfg.Lease <= 0 {
		cfg.Lease = 2 * time.Minute
	}
	if cfg.Poll <= 0 {
		cfg.Poll = time.Second
	}
	if cfg.Grace <= 0 {
		cfg.Grace = 10 * time.Second
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	host, _ := os.Hostname()
	b := make([]byte, 4)
	rand.Read(b)
	w := &Worker{cfg: cfg, store: st, events: events, domains: domains, supp: supp, transport: t, limiter: limiter,
		owner: host + "/" + hex.EncodeToString(b), wakeCh: make(chan struct{}, 1), sends: newSendCache(st, cfg.Concurrency),
		heavy: make(chan struct{}, 2)}
	w.completes = w.newCompleter()
	w.group, _ = t.(GroupTransport)
	w.alarm.wake, w.alarm.now = w.Wake, cfg.Now
	return w
}

// Wake makes the worker look for due deliveries now (after an enqueue).
func (w *Worker) Wake() {
	select {
	case w.wakeCh <- struct{}{}:
	default:
	}
}

// Start runs the claim loop and the lease rescuer until Stop.
func (w *Worker) Start(ctx context.Context) error {
	loopCtx, stop := context.WithCancel(ctx)
	attemptCtx, cancelAttempts := context.WithCancel(context.WithoutCancel(ctx))
	w.stop, w.attempts = stop, cancelAttempts
	w.wg.Add(2)
	go func() { defer w.wg.Done(); w.loop(loopCtx, attemptCtx) }()
	go func() { defer w.wg.Done(); w.rescueLoop(loopCtx) }()
	return nil
}

// Stop stops claiming, lets running attempts finish for the grace period,
// then cancels them (they are rescued later as any interrupted attempt).
func (w *Worker) Stop() {
	if w.stop == nil {
		return
	}
	w.stop()
	defer w.alarm.stop()
	done := make(chan struct{})
	go func() { w.wg.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(w.cfg.Grace):
		w.attempts()
		<-done
	}
	w.attempts()
}

// loop claims due deliveries while a second goroutine (startLoop) starts
// them as slots free. Claiming runs beside the starting, not in turn with
// it: a slot that frees while a claim waits for the database starts a
// delivery claimed earlier instead of idling for the claim.
func (w *Worker) loop(ctx, attemptCtx context.Context) {
	slots := newSlots(w.cfg.Concurrency)
	q := &readyQueue{ch: make(chan claimed, 2*w.cfg.Concurrency), started: make(chan struct{}, 1)}
	starter := make(chan struct{})
	var left []claimed // what the starter held when it stopped
	go func() { defer close(starter); left = w.startLoop(ctx, attemptCtx, slots, q) }()
	defer func() {
		<-starter
		for len(q.ch) > 0 {
			left = append(left, <-q.ch)
		}
		w.releaseAhead(left)
	}()
	for {
		// Claim for the slots that would idle, and ahead of them while
		// attempts are quick, refilling once the lead is used up, so that
		// claims stay as large as the slots (each is a transaction; it
		// runs while every slot is busy, so a slot waits for it only when
		// one frees before the claim ends). len(q.ch) <= unstarted, so
		// len(q.ch) + room <= free + ahead <= cap(q.ch): pushing never
		// blocks (only this goroutine adds).
		// unstarted first: a start between the two reads then errs on the
		// side of claiming too few (and its started token recounts).
		unstarted := int(q.unstarted.Load())
		free, ahead := slots.free(), w.claimAhead()
		need, room := free-unstarted, free+ahead-unstarted
		want, got := 0, 0
		if need > 0 || (room > 0 && room >= max(1, ahead)) {
			want = room
			ds, err := w.claim(ctx, attemptCtx, want)
			if err != nil && ctx.Err() == nil {
				w.cfg.Logger.Warn("claiming deliveries failed", "error", err)
			}
			for _, c := range ds {
				q.unstarted.Add(1)
				q.ch <- c
			}
			got = len(ds)
		}
		if got > 0 && got == want {
			continue // there may be more due right now
		}
		// After a claim that found nothing due, a slot freeing makes
		// nothing due either: only new mail (Wake), the alarm or the poll
		// does. Claiming at each freed slot anyway was most of the claims
		// of processes sharing a PostgreSQL queue (two empty claims a
		// message with four processes, BENCHMARKS.md).
		freed, started := slots.freed, q.started
		if want > 0 && got == 0 {
			freed, started = nil, nil
		}
		select {
		case <-ctx.Done():
			return
		case <-w.wakeCh:
		case <-freed:
		case <-started:
		case <-time.After(w.cfg.Poll):
		}
	}
}

// readyQueue holds deliveries claimed and not started yet.
type readyQueue struct {
	ch        chan claimed
	unstarted atomic.Int64  // in ch or held by the starter waiting for a slot
	started   chan struct{} // a token when the starter started (or released) one
}

// startLoop starts each claimed delivery as a slot frees, until ctx ends;
// it returns the one it held then, for loop to release.
func (w *Worker) startLoop(ctx, attemptCtx context.Context, slots *slots, q *readyQueue) []claimed {
	for {
		var c claimed
		select {
		case <-ctx.Done():
			return nil
		case c = <-q.ch:
		}
		h, ok := slots.take(ctx)
		if !ok {
			return []claimed{c}
		}
		w.startOrRelease(attemptCtx, c, h)
		q.unstarted.Add(-1)
		select {
		case q.started <- struct{}{}:
		default:
		}
	}
}

// claimed is a claimed delivery with what its claim prefetched.
type claimed struct {
	d   Delivery
	pre prefetched
	at  time.Time // when it was claimed
	// more are the deliveries that share d's transaction (grouping.go).
	more []claimed
}

// claim claims up to n due deliveries and prefetches what they need.
func (w *Worker) claim(ctx, attemptCtx context.Context, n int) ([]claimed, error) {
	// Nothing is recorded: a claimed delivery may still wait for its turn
	// (Admit), and the attempt's `send` entry is written with its outcome.
	now := w.cfg.Now()
	ds, err := w.store.Claim(ctx, w.owner, now, now.Add(w.cfg.Lease), n, func([]Delivery) []event.Entry { return nil })
	w.cfg.Metrics.claim(len(ds), err)
	if err != nil {
		return nil, err
	}
	pre := w.prefetch(attemptCtx, ds)
	out := make([]claimed, len(ds))
	for i, d := range ds {
		out[i] = claimed{d: d, pre: pre[i], at: now}
	}
	return w.groupClaimed(ctx, attemptCtx, out), nil
}

// start runs c's attempt in slot h.
func (w *Worker) start(attemptCtx context.Context, c claimed, h *slot) {
	w.wg.Add(1)
	go func() {
		defer w.wg.Done()
		defer h.release()
		if len(c.more) > 0 {
			w.safeAttemptGroup(withSlot(attemptCtx, h), c.all())
			return
		}
		w.safeAttempt(withSlot(attemptCtx, h), c.d, c.pre)
	}()
}

// startOrRelease starts a delivery claimed ahead, unless it waited so long
// that its lease (renewed only once the attempt runs) may lapse before it
// starts: then it goes back to the queue.
func (w *Worker) startOrRelease(attemptCtx context.Context, c claimed, h *slot) {
	if w.cfg.Now().Sub(c.at) > w.cfg.Lease/2 {
		h.release()
		w.releaseAhead([]claimed{c})
		return
	}
	w.start(attemptCtx, c, h)
}

// releaseAhead puts deliveries claimed ahead back in the queue, due now.
func (w *Worker) releaseAhead(cs []claimed) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	for _, u := range cs {
		for _, c := range u.all() {
			if err := w.store.Release(ctx, c.d.ID, w.owner, w.cfg.Now()); err != nil {
				w.cfg.Logger.Warn("releasing a delivery claimed ahead", "delivery", c.d.ID, "error", err)
			}
		}
	}
}

// claimAhead is how many deliveries to claim beyond the free slots: as
// many as the slots while recent attempts are quick, so a slot that frees
// starts its next delivery without waiting for a claim transaction; none
// while attempts are slow, where a delivery claimed ahead would wait
// behind them (and no other process could take it meanwhile).
func (w *Worker) claimAhead() int {
	if time.Duration(w.attemptEWMA.Load()) < quickAttempt {
		return w.cfg.Concurrency
	}
	return 0
}

// quickAttempt is the mean attempt time under which claiming ahead costs
// a delivery at most a fraction of a second of waiting.
const quickAttempt = 250 * time.Millisecond

// noteAttempt folds an attempt's duration into the moving average (1/8
// weight) that claimAhead reads.
func (w *Worker) noteAttempt(d time.Duration) {
	for {
		old := w.attemptEWMA.Load()
		next := old + (int64(d)-old)/8
		if w.attemptEWMA.CompareAndSwap(old, next) {
			return
		}
	}
}

// safeAttempt runs an attempt and turns a panic (a bug, or input no test
// foresaw) into a failed delivery with reason internal_error: otherwise the
// process would die, its leases expire, and the same delivery would be
// claimed and crash the next process too.
func (w *Worker) safeAttempt(ctx context.Context, d Delivery, pre prefetched) {
	t0 := time.Now()
	defer func() {
		w.noteAttempt(time.Since(t0))
		if r := recover(); r != nil {
			w.cfg.Logger.Error("delivery attempt panicked; failing the delivery", "delivery", d.ID, "panic", r,
				"stack", string(debug.Stack()))
			w.finish(ctx, d, Outcome{State: StateFailed, Message: "internal error"}, []event.Entry{
				deliveryEntry(d, event.Failed, w.cfg.Now(), map[string]any{"reason": "internal_error", "attempt": d.Attempts})}, nil)
		}
	}()
	w.attempt(ctx, d, pre)
}

func (w *Worker) rescueLoop(ctx context.Context) {
	t := time.NewTicker(max(w.cfg.Lease/4, 100*time.Millisecond))
	defer t.Stop()
	for {
		if n, err := w.store.Rescue(ctx, w.cfg.Now()); err != nil && ctx.Err() == nil {
			w.cfg.Logger.Warn("rescuing deliveries failed", "error", err)
		} else if n > 0 {
			w.cfg.Logger.Info("rescued deliveries with expired leases", "count", n)
			w.Wake()
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

func deliveryEntry(d Delivery, t event.Type, at time.Time, details map[string]any) event.Entry {
	return event.Entry{DomainID: d.DomainID, MessageID: d.MessageID, Type: t, Sender: d.Sender, Recipient: d.Recipient,
		Subject: d.Subject, Tags: d.Tags, CreatedAt: at.UTC(), Details: event.NewDetails(event.WithUserVariables(details, d.UserVars))}
}
