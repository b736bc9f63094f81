// Package inbound is the SMTP listener for mail that comes back: bounce
// reports and complaints sent to the per-delivery bounce addresses (VERP,
// bounce+ID-MAC@authdomain, see sending.VERPAddress) and mailto:
// unsubscribes (unsubscribe+TOKEN@authdomain, see tracking.URLs).
//
// It also takes mail for the addresses of inbound domains (inbound.go):
// those recipients are decided by a Receiver (internal/receiving), which
// accepts only what one of the domain's account's routes takes, and the
// message goes to it whole; bounce addresses and such recipients are never
// in one transaction (452 4.5.3), nor a recipient decided after DATA with
// any other, so that DATA's one reply is every recipient's. Messages to
// inbound domains are bounded per client address and minute (421 4.7.0,
// then the connection is closed). STARTTLS is offered with a certificate.
//
// It is not a mail server for anyone else: a bounce recipient is accepted
// at RCPT only when its local part carries a valid MAC for a delivery that
// exists, so it relays nothing and accepts nothing for made-up addresses
// (550 5.1.1). Messages are limited in size (SIZE advertised, 552 beyond),
// recipients per message are limited, and there is no AUTH. The listener is bounded like every
// SMTP door (internal/connlimit): connections at once and per client
// address (421 past them), 30 s from connecting to the first accepted
// recipient, then 5 minutes between commands; a message past a mebibyte
// waits on disk until its final dot (internal/spool).
//
// What each report does (internal/bounce classifies it):
//
//   - permanent failure: `bounced` (details: status, diagnostic_code,
//     remote_mta, source "dsn"), a bounce suppression whose source is
//     "dsn:STATUS", and a delivered delivery becomes bounced;
//   - delayed: `temporary_fail` (details: status, diagnostic_code,
//     reason "delayed", source "dsn"); nothing is suppressed;
//   - complaint (ARF): `unsubscribed` with source "complaint" and an
//     unsubscribe suppression with that source;
//   - anything else (auto-replies, unknown reports): logged, no change.
//
// The bounce address names the delivery, so the report is applied to it:
// the report whose recipient is the delivery's recipient, or the first one
// when none names it (forwarding changes the final address). A failure to
// record answers 451 so that the reporting server tries again.
package inbound
