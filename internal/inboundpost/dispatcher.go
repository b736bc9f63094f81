package inboundpost

import (
	"bytes"
	"cmp"
	"context"
	"crypto/rand"
	"encoding/hex"
	"io"
	"log/slog"
	"net/http"
	"os"
	"sync"
	"time"

	"github.com/postline/postline/internal/event"
	"github.com/postline/postline/internal/webhook"
)

// Config configures a Dispatcher; zero values take the defaults.
type Config struct {
	Poll        time.Duration // how often to look for due posts (default 1s)
	Timeout     time.Duration // per post (default 30s)
	Lease       time.Duration // how long a post is held while posting (default 2m)
	Concurrency int           // posts at once (default 4)
	RetryBase   time.Duration // wait after a first failure, doubling to an hour (default 10s)
	// RetryWindow is how long after it was queued a post is retried
	// (default 8h, as Mailgun).
	RetryWindow time.Duration
	// RecordWait is how long a post waits for its message's receipt to
	// be recorded before it is dropped (default 5m).
	RecordWait time.Duration
	// Keep is how long posts are kept, so that a client's late retry is
	// still recognised (default 72h; never less than a post may take to
	// end).
	Keep         time.Duration
	AllowPrivate bool // --webhook-allow-private
	// Resolver looks up hosts (the --dns-server resolver); nil: the system's.
	Resolver webhook.Resolver
	// PublicURL is the API's base URL, for notifications' message-url.
	PublicURL string
	Now       func() time.Time
	Logger    *slog.Logger
	Metrics   *Metrics // nil counts nothing
}

// Log is what the dispatcher reads of the delivery log: a message's
// received entries.
type Log interface {
	List(ctx context.Context, f event.Filter) ([]event.Entry, error)
}

// SigningKeys gives an account's webhook signing key (*webhook.Service).
type SigningKeys interface {
	SigningKey(ctx context.Context, accountID int64) (string, error)
}

// Deps are what a Dispatcher uses.
type Deps struct {
	Store Store
	Log   Log
	Keys  SigningKeys
	// DomainName names a domain (for message-url).
	DomainName func(ctx context.Context, id int64) (string, error)
	// Wake is called for a domain whose log got an entry (may be nil).
	Wake func(domainID int64)
}

// Dispatcher posts queued posts: one process per post at a time (a
// lease), several posts at once.
type Dispatcher struct {
	cfg    Config
	deps   Deps
	client *http.Client
	owner  string
	stop   context.CancelFunc
	wg     sync.WaitGroup

	slots    chan struct{}
	inflight sync.WaitGroup
	mu       sync.Mutex
	running  map[int64]bool
	pruned   time.Time
}

// NewDispatcher returns a Dispatcher.
func NewDispatcher(cfg Config, deps Deps) *Dispatcher {
	cfg.Poll = cmp.Or(cfg.Poll, time.Second)
	cfg.Timeout = cmp.Or(cfg.Timeout, 30*time.Second)
	// A lease outlives the post it covers, or another process would post
	// it again meanwhile.
	cfg.Lease = max(cmp.Or(cfg.Lease, 2*time.Minute), 2*cfg.Timeout)
	cfg.Concurrency = cmp.Or(cfg.Concurrency, 4)
	cfg.RetryBase = cmp.Or(cfg.RetryBase, 10*time.Second)
	cfg.RetryWindow = cmp.Or(cfg.RetryWindow, 8*time.Hour)
	cfg.RecordWait = cmp.Or(cfg.RecordWait, 5*time.Minute)
	// Pending posts are never pruned: kept at least as long as one can
	// be retried.
	cfg.Keep = max(cmp.Or(cfg.Keep, 72*time.Hour), cfg.RetryWindow+cfg.RecordWait+cfg.Lease)
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	host, _ := os.Hostname()
	b := make([]byte, 4)
	rand.Read(b) //nolint:errcheck // crypto/rand does not fail
	return &Dispatcher{cfg: cfg, deps: deps, client: webhook.NewClient(cfg.AllowPrivate, cfg.Timeout, cfg.Resolver),
		owner: host + "/" + hex.EncodeToString(b), slots: make(chan struct{}, cfg.Concurrency), running: map[int64]bool{}}
}

// Start runs the dispatcher until Stop.
func (d *Dispatcher) Start(ctx context.Context) error {
	ctx, d.stop = context.WithCancel(ctx)
	d.wg.Add(1)
	go func() {
		defer d.wg.Done()
		t := time.NewTicker(d.cfg.Poll)
		defer t.Stop()
		for {
			if err := d.round(ctx); err != nil && ctx.Err() == nil {
				d.cfg.Logger.Warn("inbound posts: dispatch failed", "error", err)
			}
			select {
			case <-ctx.Done():
				return
			case <-t.C:
			}
		}
	}()
	return nil
}

// Stop ends the dispatcher and waits for the posts in flight.
func (d *Dispatcher) Stop() {
	if d.stop != nil {
		d.stop()
	}
	d.wg.Wait()
	d.inflight.Wait()
}

// RunOnce starts every due post a slot is free for and waits for them.
func (d *Dispatcher) RunOnce(ctx context.Context) error {
	err := d.round(ctx)
	d.inflight.Wait()
	return err
}

// round starts due posts without waiting for them, and prunes finished
// posts once an hour.
func (d *Dispatcher) round(ctx context.Context) error {
	now := d.cfg.Now()
	if now.Sub(d.pruned) > time.Hour {
		d.pruned = now
		if _, err := d.deps.Store.PrunePosts(ctx, now.Add(-d.cfg.Keep), 500); err != nil {
			return err
		}
	}
	due, err := d.deps.Store.DuePosts(ctx, now, 2*d.cfg.Concurrency)
	if err != nil {
		return err
	}
	for _, p := range due {
		if !d.begin(p.ID) {
			continue
		}
		select {
		case d.slots <- struct{}{}:
		default: // every slot busy: the rest wait for the next round
			d.end(p.ID)
			return nil
		}
		d.inflight.Add(1)
		go func() {
			defer func() { <-d.slots; d.end(p.ID); d.inflight.Done() }()
			if err := d.deliver(ctx, p); err != nil && ctx.Err() == nil {
				d.cfg.Logger.Warn("inbound posts: posting", "post", p.ID, "error", err)
			}
		}()
	}
	return nil
}

func (d *Dispatcher) begin(id int64) bool {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.running[id] {
		return false
	}
	d.running[id] = true
	return true
}

func (d *Dispatcher) end(id int64) {
	d.mu.Lock()
	delete(d.running, id)
	d.mu.Unlock()
}

// recorded reports whether the received entry that queued p is in the
// log: posts wait for it, so that nothing is posted for a message whose
// receipt was refused after its posts were queued.
func (d *Dispatcher) recorded(ctx context.Context, p Post) (bool, error) {
	entries, err := d.deps.Log.List(ctx, event.Filter{DomainID: p.DomainID, MessageID: p.MessageID, Type: event.Received, Limit: 100})
	if err != nil {
		return false, err
	}
	for _, e := range entries {
		if bytes.Contains(e.Details, []byte(p.Token)) {
			return true, nil
		}
	}
	return false, nil
}
