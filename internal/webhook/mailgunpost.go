package webhook

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"

	"github.com/postline/postline/internal/event"
	"github.com/postline/postline/internal/mailgun"
)

// deliverMailgun posts the entries w receives one by one, as Mailgun
// does: {"signature": {...}, "event-data": {...}} signed with the domain's
// account's signing key. The cursor moves past each entry posted (2xx),
// refused for good (406) or failing longer than MailgunRetryWindow after
// it happened; any other failure stops at that entry and retries it after
// the backoff. It stops early, keeping what it did, when half the lease
// has gone, so that a slow endpoint cannot outlive its lease.
func (d *Dispatcher) deliverMailgun(ctx, rec context.Context, w Webhook, entries []event.Entry) error {
	var batch []event.Entry
	var ids []string
	for _, e := range entries {
		if w.Receives(e) {
			batch = append(batch, e)
			ids = append(ids, e.MessageID)
		}
	}
	last := entries[len(entries)-1].ID
	if len(batch) == 0 {
		return d.store.Advance(rec, w.ID, d.owner, last, false, d.cfg.Now())
	}
	key, err := d.keys.domainSigningKey(ctx, w.DomainID)
	if err != nil {
		return d.fail(rec, w, fmt.Errorf("reading the signing key: %w", err))
	}
	headers := map[string]map[string]string{}
	if d.cfg.Headers != nil {
		if headers, err = d.cfg.Headers.SendHeaders(ctx, w.DomainID, ids); err != nil {
			return d.fail(rec, w, fmt.Errorf("reading the messages' variables: %w", err))
		}
	}
	began := d.cfg.Now()
	cursor, posted := w.Cursor, false
	for i, e := range batch {
		if d.cfg.Now().Sub(began) > d.cfg.Lease/2 {
			return d.store.Advance(rec, w.ID, d.owner, cursor, posted, d.cfg.Now())
		}
		start := d.cfg.Now()
		status, err := d.postMailgun(ctx, w, key, mailgun.Item(e, headers[e.MessageID]))
		if err != nil && ctx.Err() != nil { // stopping: not the endpoint's failure
			if cursor != w.Cursor {
				return d.store.Advance(rec, w.ID, d.owner, cursor, posted, d.cfg.Now())
			}
			return d.store.Release(rec, w.ID, d.owner)
		}
		p := Post{WebhookID: w.ID, At: start, Status: status, Entries: 1, Duration: d.cfg.Now().Sub(start)}
		giveUp := status == http.StatusNotAcceptable || d.cfg.Now().Sub(e.CreatedAt) >= d.cfg.MailgunRetryWindow
		if err != nil {
			p.Error = d.failureText(err)
			switch {
			case status == http.StatusNotAcceptable:
				p.Error += "; not retried (406)"
			case giveUp:
				p.Error += fmt.Sprintf("; given up %s after the event", d.cfg.MailgunRetryWindow)
			}
		}
		if rerr := d.store.RecordPost(rec, p); rerr != nil {
			d.cfg.Logger.Warn("webhooks: recording a post", "webhook", w.ID, "error", rerr)
		}
		d.cfg.Metrics.posted(err == nil, d.cfg.Now().Sub(e.CreatedAt))
		if err != nil && !giveUp {
			return d.failAt(rec, w, cursor, err)
		}
		posted = posted || err == nil
		cursor = e.ID
		if i == len(batch)-1 {
			cursor = last // the entries after it are none of this webhook's
		}
	}
	return d.store.Advance(rec, w.ID, d.owner, cursor, posted, d.cfg.Now())
}

// postMailgun posts one event in Mailgun's shape.
func (d *Dispatcher) postMailgun(ctx context.Context, w Webhook, key string, item map[string]any) (int, error) {
	if key == "" {
		return 0, errors.New("the account has no webhook signing key")
	}
	body, err := json.Marshal(map[string]any{"signature": mailgun.Sign(key, d.cfg.Now()), "event-data": item})
	if err != nil {
		return 0, err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, w.URL, bytes.NewReader(body))
	if err != nil {
		return 0, err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("User-Agent", "Postline-Webhook/1 (Mailgun format)")
	return d.do(req)
}
