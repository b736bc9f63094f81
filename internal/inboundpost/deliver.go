package inboundpost

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"time"

	"github.com/postline/postline/internal/event"
	"github.com/postline/postline/internal/webhook"
)

// deliver makes one try of p under a lease.
func (d *Dispatcher) deliver(ctx context.Context, p Post) error {
	now := d.cfg.Now()
	if ok, err := d.deps.Store.LeasePost(ctx, p.ID, d.owner, now, now.Add(d.cfg.Lease)); err != nil || !ok {
		return err
	}
	// What follows the lease is recorded even when the dispatcher stops
	// mid-post, so that the lease does not linger.
	rec, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
	defer cancel()
	wait := Result{State: StatePending, Attempts: p.Attempts, Status: p.LastStatus, Error: p.LastError, At: now}
	ok, err := d.recorded(ctx, p)
	switch {
	case err != nil:
		wait.Next = now.Add(d.cfg.Poll)
		return errors.Join(err, d.deps.Store.RetryPost(rec, p.ID, d.owner, wait))
	case !ok && now.Sub(p.CreatedAt) >= d.cfg.RecordWait:
		d.cfg.Metrics.count(StateDropped)
		d.cfg.Logger.Info("inbound posts: dropped: the message's receipt was not recorded", "post", p.ID, "domain", p.DomainID)
		return d.deps.Store.FinishPost(rec, p.ID, d.owner, Result{State: StateDropped, Attempts: p.Attempts, At: now}, nil)
	case !ok:
		wait.Next = now.Add(d.cfg.Poll)
		return d.deps.Store.RetryPost(rec, p.ID, d.owner, wait)
	}
	raw, err := d.deps.Store.PostRaw(ctx, p.ID)
	if err != nil {
		wait.Next = now.Add(d.cfg.Poll)
		return errors.Join(err, d.deps.Store.RetryPost(rec, p.ID, d.owner, wait))
	}
	m := readMessage(raw)
	status, err := d.post(ctx, p, m)
	if err != nil && ctx.Err() != nil { // stopping: not the endpoint's failure
		wait.Next = now
		return d.deps.Store.RetryPost(rec, p.ID, d.owner, wait)
	}
	return d.settle(rec, p, m, status, err)
}

// settle records a try's outcome: posted, failed for good, or retried
// with the backoff while the retry window lasts.
func (d *Dispatcher) settle(ctx context.Context, p Post, m message, status int, err error) error {
	now := d.cfg.Now()
	r := Result{State: StatePosted, Attempts: p.Attempts, Status: status, At: now}
	if err != nil {
		r.Attempts++
		r.Error = failureText(err)
		switch {
		case permanent(status, err):
			r.State = StateFailed
			if status != 0 {
				r.Error += "; not retried"
			}
		case now.Sub(p.CreatedAt) >= d.cfg.RetryWindow:
			r.State = StateFailed
			r.Error += fmt.Sprintf("; given up %s after it was queued", d.cfg.RetryWindow)
		default:
			r.State, r.Next = StatePending, now.Add(webhook.Backoff(d.cfg.RetryBase, r.Attempts))
			d.cfg.Metrics.count("retried")
			return d.deps.Store.RetryPost(ctx, p.ID, d.owner, r)
		}
	}
	d.cfg.Metrics.count(r.State)
	entry := d.entry(p, m, r)
	if err := d.deps.Store.FinishPost(ctx, p.ID, d.owner, r, &entry); err != nil {
		return err
	}
	if d.deps.Wake != nil {
		d.deps.Wake(p.DomainID)
	}
	return nil
}

// permanent reports a failure no retry can mend: an address the operator
// has not allowed, or a 4xx answer other than 408 and 429 (406 is
// Mailgun's "do not retry", 403 Postmark's).
func permanent(status int, err error) bool {
	if webhook.Forbidden(err) {
		return true
	}
	return status >= 400 && status < 500 && status != http.StatusRequestTimeout && status != http.StatusTooManyRequests
}

// entry is the post's log entry: its outcome, under the message's id.
func (d *Dispatcher) entry(p Post, m message, r Result) event.Entry {
	details := map[string]any{"post": p.Token, "route": p.RouteID, "action": p.Kind, "url": p.URL, "format": p.Format,
		"outcome": r.State, "attempts": r.Attempts + boolInt(r.State == StatePosted)}
	if r.Status != 0 {
		details["status"] = r.Status
	}
	if r.Error != "" {
		details["error"] = r.Error
	}
	if p.StoredID != "" {
		details["stored_id"] = p.StoredID
	}
	return event.Entry{DomainID: p.DomainID, MessageID: p.MessageID, Type: event.Post, Sender: p.Sender, Recipient: p.Recipient,
		Subject: m.subject, CreatedAt: r.At.UTC().Truncate(time.Millisecond), Details: event.NewDetails(details)}
}

func boolInt(b bool) int {
	if b {
		return 1
	}
	return 0
}

// failureText is what the log shows of a failed try: the status line, or
// the kind of network failure in the webhooks' words (never the raw
// error, which may name the operator's network).
func failureText(err error) string {
	if errors.Is(err, errStatus) {
		return err.Error()
	}
	return webhook.FailureText(err)
}

// errStatus is an answer other than 2xx.
var errStatus = errors.New("the endpoint answered")

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
