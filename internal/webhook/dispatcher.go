package webhook

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"strconv"
	"sync"
	"time"

	"github.com/postline/postline/internal/event"
)

// BatchSize is the most entries one post carries.
const BatchSize = 100

// DispatcherConfig configures a Dispatcher. Zero values take the defaults.
type DispatcherConfig struct {
	Poll         time.Duration // how often to look for due webhooks (default 1s)
	Timeout      time.Duration // per post (default 10s)
	Lease        time.Duration // how long a webhook is held while posting (default 1m)
	Concurrency  int           // posts at once (default 4)
	RetryBase    time.Duration // wait after a first failure, doubling to an hour (default 10s)
	AllowPrivate bool          // allow loopback and private addresses
	Now          func() time.Time
	Logger       *slog.Logger
}

// Dispatcher posts log entries to webhooks.
type Dispatcher struct {
	cfg     DispatcherConfig
	store   Store
	events  event.Store
	domains func(ctx context.Context, id int64) (string, error) // domain name for the payload
	client  *http.Client
	owner   string
	stop    context.CancelFunc
	wg      sync.WaitGroup
}

// NewDispatcher returns a Dispatcher reading entries from events and
// domain names through domainName.
func NewDispatcher(cfg DispatcherConfig, st Store, events event.Store, domainName func(ctx context.Context, id int64) (string, error)) *Dispatcher {
	if cfg.Poll <= 0 {
		cfg.Poll = time.Second
	}
	if cfg.Timeout <= 0 {
		cfg.Timeout = 10 * time.Second
	}
	if cfg.Lease <= 0 {
		cfg.Lease = time.Minute
	}
	if cfg.Concurrency <= 0 {
		cfg.Concurrency = 4
	}
	if cfg.RetryBase <= 0 {
		cfg.RetryBase = 10 * time.Second
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
	return &Dispatcher{cfg: cfg, store: st, events: events, domains: domainName,
		client: newClient(cfg.AllowPrivate, cfg.Timeout), owner: host + "/" + hex.EncodeToString(b)}
}

// Start runs the dispatcher until Stop.
func (d *Dispatcher) Start(ctx context.Context) {
	ctx, d.stop = context.WithCancel(ctx)
	d.wg.Add(1)
	go func() {
		defer d.wg.Done()
		t := time.NewTicker(d.cfg.Poll)
		defer t.Stop()
		for {
			if err := d.RunOnce(ctx); err != nil && ctx.Err() == nil {
				d.cfg.Logger.Warn("webhooks: dispatch failed", "error", err)
			}
			select {
			case <-ctx.Done():
				return
			case <-t.C:
			}
		}
	}()
}

// Stop ends the dispatcher and waits for posts in flight.
func (d *Dispatcher) Stop() {
	if d.stop != nil {
		d.stop()
	}
	d.wg.Wait()
}

// RunOnce posts one batch to every due webhook that has entries waiting.
func (d *Dispatcher) RunOnce(ctx context.Context) error {
	due, err := d.store.Due(ctx, d.cfg.Now(), 100)
	if err != nil {
		return err
	}
	sem := make(chan struct{}, d.cfg.Concurrency)
	var wg sync.WaitGroup
	for _, w := range due {
		sem <- struct{}{}
		wg.Add(1)
		go func() {
			defer func() { <-sem; wg.Done() }()
			if err := d.deliver(ctx, w); err != nil && ctx.Err() == nil {
				d.cfg.Logger.Warn("webhooks: delivering", "webhook", w.ID, "error", err)
			}
		}()
	}
	wg.Wait()
	return nil
}

// deliver posts the next batch of w, if there is one.
func (d *Dispatcher) deliver(ctx context.Context, w Webhook) error {
	_, hi, err := d.events.Bounds(ctx, event.Filter{DomainID: w.DomainID})
	if err != nil || hi <= w.Cursor {
		return err // nothing recorded past the cursor (or nothing that may not still move)
	}
	now := d.cfg.Now()
	if ok, err := d.store.Lease(ctx, w.ID, d.owner, w.Cursor, now, now.Add(d.cfg.Lease)); err != nil || !ok {
		return err
	}
	entries, err := d.events.List(ctx, event.Filter{DomainID: w.DomainID, AfterID: w.Cursor, UpToID: hi,
		Order: event.OldestFirst, Limit: BatchSize})
	if err != nil {
		return d.fail(ctx, w, fmt.Errorf("reading the log: %w", err))
	}
	if len(entries) == 0 {
		return d.store.Advance(ctx, w.ID, d.owner, w.Cursor, d.cfg.Now())
	}
	last := entries[len(entries)-1].ID
	var batch []event.Entry
	for _, e := range entries {
		if w.Wants(e.Type) {
			batch = append(batch, e)
		}
	}
	if len(batch) > 0 {
		if err := d.post(ctx, w, batch); err != nil {
			return d.fail(ctx, w, err)
		}
	}
	return d.store.Advance(ctx, w.ID, d.owner, last, d.cfg.Now())
}

func (d *Dispatcher) post(ctx context.Context, w Webhook, batch []event.Entry) error {
	name, err := d.domains(ctx, w.DomainID)
	if err != nil {
		return err
	}
	body := []byte(`{"webhook_id":` + strconv.FormatInt(w.ID, 10) + `,"domain":`)
	body = strconv.AppendQuote(body, name) // a domain name is ASCII: Go and JSON quoting agree
	body = append(body, `,"events":`...)
	body = event.AppendJSONArray(body, batch)
	body = append(body, '}')
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, w.URL, bytes.NewReader(body))
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("User-Agent", "Postline-Webhook/1")
	req.Header.Set(SignatureHeader, Sign(w.Secret, d.cfg.Now(), body))
	resp, err := d.client.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10)) //nolint:errcheck // keeps the connection reusable
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		return fmt.Errorf("the endpoint answered %s", resp.Status)
	}
	return nil
}

// Backoff is the wait after the n-th failure in a row: base doubling to an hour.
func Backoff(base time.Duration, n int) time.Duration {
	b := base
	for i := 1; i < n && b < time.Hour; i++ {
		b *= 2
	}
	return min(b, time.Hour)
}

func (d *Dispatcher) fail(ctx context.Context, w Webhook, cause error) error {
	msg := cause.Error()
	if len(msg) > 500 {
		msg = msg[:500]
	}
	return d.store.Fail(ctx, w.ID, d.owner, d.cfg.Now().Add(Backoff(d.cfg.RetryBase, w.Attempts+1)), msg)
}
