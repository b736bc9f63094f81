package webhook

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/tls"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"os"
	"strconv"
	"sync"
	"syscall"
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
	Concurrency  int           // posts at once (default 8)
	RetryBase    time.Duration // wait after a first failure, doubling to an hour (default 10s)
	AllowPrivate bool          // allow loopback and private addresses
	// Resolver looks up webhook hosts (the --dns-server resolver); nil
	// uses the system's.
	Resolver Resolver
	Now      func() time.Time
	Logger   *slog.Logger
	// Metrics counts posts and their lag; nil counts nothing.
	Metrics *Metrics
	// Headers gives the headers sends were accepted with, for the user
	// variables of Mailgun-format posts; nil: posts carry none.
	Headers HeaderSource
	// MailgunRetryWindow is how long after an event a Mailgun-format
	// webhook keeps retrying it (default 8h, as Mailgun).
	MailgunRetryWindow time.Duration
}

// HeaderSource gives the headers a send was accepted with, by message id
// (*sending.Service satisfies it).
type HeaderSource interface {
	SendHeaders(ctx context.Context, domainID int64, messageIDs []string) (map[string]map[string]string, error)
}

// Dispatcher posts log entries to webhooks.
type Dispatcher struct {
	cfg     DispatcherConfig
	store   Store
	keys    *Service // the accounts' signing keys
	events  event.Store
	domains func(ctx context.Context, id int64) (string, error) // domain name for the payload
	client  *http.Client
	owner   string
	stop    context.CancelFunc
	wg      sync.WaitGroup

	slots    chan struct{}  // posts at once
	inflight sync.WaitGroup // posts running
	mu       sync.Mutex
	running  map[int64]bool // webhooks with a post running
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
		cfg.Concurrency = 8
	}
	if cfg.RetryBase <= 0 {
		cfg.RetryBase = 10 * time.Second
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.MailgunRetryWindow <= 0 {
		cfg.MailgunRetryWindow = 8 * time.Hour
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	host, _ := os.Hostname()
	b := make([]byte, 4)
	rand.Read(b)
	return &Dispatcher{cfg: cfg, store: st, keys: NewService(st, cfg.Now), events: events, domains: domainName,
		client: newClient(cfg.AllowPrivate, cfg.Timeout, cfg.Resolver), owner: host + "/" + hex.EncodeToString(b),
		slots: make(chan struct{}, cfg.Concurrency), running: map[int64]bool{}}
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
			if err := d.round(ctx); err != nil && ctx.Err() == nil {
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
	d.inflight.Wait()
}

// RunOnce posts one batch to every due webhook that has entries waiting,
// and waits for those posts.
func (d *Dispatcher) RunOnce(ctx context.Context) error {
	err := d.round(ctx)
	d.inflight.Wait()
	return err
}

// round starts a post for every due webhook that has entries past its
// cursor and no post in flight, while one of the Concurrency slots is free,
// without waiting for them: a slow endpoint holds its own slot, not the
// next round.
// Every due webhook is considered, longest due first (one that just posted
// goes to the back), and the log is asked once per domain, so neither quiet
// nor busy webhooks can crowd out others.
func (d *Dispatcher) round(ctx context.Context) error {
	now := d.cfg.Now()
	tops := map[int64]int64{} // domain → log horizon, once per round
	var after Position        // the zero time sorts before every row
	for {
		due, err := d.store.Due(ctx, now, after, 500)
		if err != nil || len(due) == 0 {
			return err
		}
		last := due[len(due)-1]
		after = Position{NextAttemptAt: last.NextAttemptAt, ID: last.ID}
		for _, w := range due {
			top, ok := tops[w.DomainID]
			if !ok {
				if _, top, err = d.events.Bounds(ctx, event.Filter{DomainID: w.DomainID}); err != nil {
					return err
				}
				tops[w.DomainID] = top
			}
			if top <= w.Cursor || !d.start(w.ID) {
				continue // nothing past the cursor, or a post for it is still running
			}
			select {
			case d.slots <- struct{}{}:
			default: // every slot busy: the rest wait for the next round
				d.finish(w.ID)
				return nil
			}
			d.inflight.Add(1)
			go func() {
				defer func() { <-d.slots; d.finish(w.ID); d.inflight.Done() }()
				if err := d.deliver(ctx, w, top); err != nil && ctx.Err() == nil {
					d.cfg.Logger.Warn("webhooks: delivering", "webhook", w.ID, "error", err)
				}
			}()
		}
	}
}

// start marks a post for webhook id as running; false if one already is.
func (d *Dispatcher) start(id int64) bool {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.running[id] {
		return false
	}
	d.running[id] = true
	return true
}

func (d *Dispatcher) finish(id int64) {
	d.mu.Lock()
	delete(d.running, id)
	d.mu.Unlock()
}

// deliver posts the next batch of w (entries up to the horizon hi).
func (d *Dispatcher) deliver(ctx context.Context, w Webhook, hi int64) error {
	// What follows the lease is recorded even when the dispatcher stops
	// mid-post, so that the lease does not linger.
	rec, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
	defer cancel()
	now := d.cfg.Now()
	if ok, err := d.store.Lease(ctx, w.ID, d.owner, w.Cursor, now, now.Add(d.cfg.Lease)); err != nil || !ok {
		return err
	}
	if w.Unreadable != "" {
		return d.fail(rec, w, errors.New(w.Unreadable))
	}
	entries, err := d.events.List(ctx, event.Filter{DomainID: w.DomainID, AfterID: w.Cursor, UpToID: hi,
		Order: event.OldestFirst, Limit: BatchSize})
	if err != nil {
		return d.fail(rec, w, fmt.Errorf("reading the log: %w", err))
	}
	if len(entries) == 0 {
		return d.store.Advance(rec, w.ID, d.owner, w.Cursor, false, d.cfg.Now())
	}
	if w.Format == FormatMailgun {
		return d.deliverMailgun(ctx, rec, w, entries)
	}
	last := entries[len(entries)-1].ID
	var batch []event.Entry
	for _, e := range entries {
		if w.Receives(e) {
			batch = append(batch, e)
		}
	}
	if len(batch) > 0 {
		start := d.cfg.Now()
		status, err := d.post(ctx, w, batch)
		if err != nil && ctx.Err() != nil { // stopping: not the endpoint's failure
			return d.store.Release(rec, w.ID, d.owner)
		}
		p := Post{WebhookID: w.ID, At: start, Status: status, Entries: len(batch), Duration: d.cfg.Now().Sub(start)}
		if err != nil {
			p.Error = d.failureText(err)
		}
		if rerr := d.store.RecordPost(rec, p); rerr != nil {
			d.cfg.Logger.Warn("webhooks: recording a post", "webhook", w.ID, "error", rerr)
		}
		d.cfg.Metrics.posted(err == nil, d.cfg.Now().Sub(batch[0].CreatedAt))
		if err != nil {
			return d.fail(rec, w, err)
		}
	}
	return d.store.Advance(rec, w.ID, d.owner, last, len(batch) > 0, d.cfg.Now())
}

// post sends one batch and returns the endpoint's status (0 without an
// answer); an answer other than 2xx is an error.
func (d *Dispatcher) post(ctx context.Context, w Webhook, batch []event.Entry) (int, error) {
	name, err := d.domains(ctx, w.DomainID)
	if err != nil {
		return 0, err
	}
	// The same id for a retry of the same entries, so receivers can
	// de-duplicate (Standard Webhooks).
	id := "msg_" + strconv.FormatInt(w.ID, 10) + "_" + strconv.FormatInt(batch[len(batch)-1].ID, 10)
	return d.postBatch(ctx, w, name, id, batch)
}

// postBatch posts entries of domain name to w in Postline's format, with
// the Standard Webhooks id given.
func (d *Dispatcher) postBatch(ctx context.Context, w Webhook, name, id string, batch []event.Entry) (int, error) {
	body := []byte(`{"webhook_id":` + strconv.FormatInt(w.ID, 10) + `,"domain":`)
	body = strconv.AppendQuote(body, name) // a domain name is ASCII: Go and JSON quoting agree
	body = append(body, `,"events":`...)
	body = event.AppendJSONArray(body, batch)
	body = append(body, '}')
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, w.URL, bytes.NewReader(body))
	if err != nil {
		return 0, err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("User-Agent", "Postline-Webhook/1")
	now := d.cfg.Now()
	req.Header.Set(SignatureHeader, Sign(w.Secret, now, body))
	req.Header.Set(StandardID, id)
	req.Header.Set(StandardTimestamp, strconv.FormatInt(now.Unix(), 10))
	req.Header.Set(StandardSignature, StandardSign(w.Secret, id, now, body))
	return d.do(req)
}

// do sends a post and returns the endpoint's status (0 without an
// answer); an answer other than 2xx is an error.
func (d *Dispatcher) do(req *http.Request) (int, error) {
	resp, err := d.client.Do(req)
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10)) //nolint:errcheck // keeps the connection reusable
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		return resp.StatusCode, fmt.Errorf("%w %s", errStatus, resp.Status)
	}
	return resp.StatusCode, nil
}

// Backoff is the wait after the n-th failure in a row: base doubling to an hour.
func Backoff(base time.Duration, n int) time.Duration {
	b := base
	for i := 1; i < n && b < time.Hour; i++ {
		b *= 2
	}
	return min(b, time.Hour)
}

// errStatus is a post answered with a status other than 2xx.
var errStatus = errors.New("the endpoint answered")

func (d *Dispatcher) fail(ctx context.Context, w Webhook, cause error) error {
	if !errors.Is(cause, errStatus) {
		d.cfg.Logger.Info("webhooks: post failed", "webhook", w.ID, "error", cause) // the operator's view, in full
	}
	return d.failAt(ctx, w, w.Cursor, cause)
}

// failAt records a failed post with the cursor at cursor: failures in a
// row count from one again when it moved.
func (d *Dispatcher) failAt(ctx context.Context, w Webhook, cursor int64, cause error) error {
	n := w.Attempts + 1
	if cursor != w.Cursor {
		n = 1
	}
	return d.store.Fail(ctx, w.ID, d.owner, cursor, d.cfg.Now().Add(Backoff(d.cfg.RetryBase, n)), d.failureText(cause))
}

// failureText is what the owner is shown of a failed post: written for
// the tenant, from the kind of failure, never the raw network error (which
// may name the operator's resolver, proxy or internal addresses).
func (d *Dispatcher) failureText(cause error) string {
	msg := publicText(cause)
	if len(msg) > 500 {
		msg = msg[:500]
	}
	return msg
}

func publicText(cause error) string {
	host := "the webhook's host"
	var ue *url.Error
	if errors.As(cause, &ue) {
		if u, err := url.Parse(ue.URL); err == nil && u.Host != "" {
			host = u.Host
		}
	}
	var dnsErr *net.DNSError
	var op *net.OpError
	var certErr *tls.CertificateVerificationError
	var recErr tls.RecordHeaderError
	switch {
	case errors.Is(cause, errForbiddenAddress):
		return errForbiddenAddress.Error() // not the address: that would map the operator's network
	case errors.As(cause, &dnsErr), errors.Is(cause, errUnresolved):
		return "cannot resolve " + hostOnly(host)
	case errors.As(cause, &certErr):
		return "TLS: the certificate of " + host + " is not valid: " + certErr.Err.Error()
	case errors.As(cause, &recErr):
		return "TLS: " + host + " did not answer with TLS"
	case errors.Is(cause, context.DeadlineExceeded) || (ue != nil && ue.Timeout()):
		return "no answer from " + host + " in time"
	case errors.As(cause, &op):
		if errors.Is(op.Err, syscall.ECONNREFUSED) {
			return "connection refused by " + host
		}
		return "cannot connect to " + host
	case errors.Is(cause, errStatus):
		return cause.Error()
	case ue != nil:
		return "the post to " + host + " failed"
	}
	return "the server could not make the post; it will retry"
}

func hostOnly(hostport string) string {
	if h, _, err := net.SplitHostPort(hostport); err == nil {
		return h
	}
	return hostport
}
