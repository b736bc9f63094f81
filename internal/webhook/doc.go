// Package webhook pushes a domain's delivery log entries to the owner's
// HTTPS endpoints as they are recorded: signed, in order, at least once.
//
// # Model
//
// A webhook is a URL, an optional set of event types and a secret, on one
// domain. Its cursor is the id of the last log entry it has dealt with;
// entries are read from the delivery log itself (ids above the cursor, up
// to the log's horizon, oldest first), so nothing is copied into a
// separate outbox and nothing recorded can be missed. A new webhook starts
// at the domain's newest entry: it receives what happens from then on.
//
// # Delivery
//
// A dispatcher in every `serve` process looks for webhooks that are due
// and have entries past their cursor, takes a lease on one (so one process
// at a time posts for a webhook, which keeps the order), and POSTs up to
// BatchSize entries of its types as {"webhook_id", "domain", "events": [...]}
// (each event is the log entry object of the log endpoints). A 2xx answer
// moves the cursor past the batch, entries of other types included. Any
// other answer, a redirect, a network error or a timeout (10 s) keeps the
// cursor and retries after 10 s, doubling up to an hour, for as long as the
// entries are kept (--log-retention). A process that dies mid-post leaves
// its lease to expire and the batch is posted again: receivers dedupe by
// the event id.
//
// # Mailgun format
//
// A webhook of FormatMailgun answers to one of Mailgun's webhook ids
// (delivered, permanent_fail ...; a domain has up to three URLs per id,
// each its own webhook with its own cursor) and posts each entry of that
// id alone, as Mailgun does: {"signature": {"timestamp", "token",
// "signature"}, "event-data": {...}}, the signature being the hex
// HMAC-SHA256 of timestamp+token under the account's webhook signing key,
// event-data the events API's object (package mailgun) with the message's
// user variables. The cursor moves past each entry answered 2xx; a 406
// drops the entry (Mailgun's "do not retry"); other failures retry it
// with the backoff above for MailgunRetryWindow (8 hours) after the event,
// then drop it. Entries after a failing one wait for it.
//
// # Signature
//
// Postline-Signature: t=UNIX,v1=HEX where HEX is the hex HMAC-SHA-256 of
// "UNIX.BODY" under the webhook's secret (shown once, at creation). Verify
// recomputes it, compares in constant time and rejects timestamps older
// than the receiver's tolerance (replays).
//
// # Where it may connect
//
// Tenants choose the URLs, so the dispatcher refuses to connect to
// loopback, private, link-local, multicast and unspecified addresses,
// checked on the address actually dialled (after DNS, so rebinding does not
// help), unless the operator allows it (--webhook-allow-private, for
// receivers on the same network and for tests).
package webhook
