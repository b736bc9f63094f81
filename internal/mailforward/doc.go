// Package mailforward carries out an inbound route's
// forward("someone@example.org"): the received message is passed on as
// it came, through the sending intake's forward mode and the delivery
// queue, like any message the account sends. It is the Address side of
// receiving.Forwarders; it never opens a socket.
//
// # What is sent
//
// The message as received, our Authentication-Results and Received on
// top (receiving.Handoff), with every field and the body kept, except:
//
//   - an `X-Postline-Forwarded-By: ROUTE@DOMAIN` field is added on top
//     (the route's id, the receiving domain): the loop mark;
//   - when the From domain publishes DMARC p=quarantine or p=reject (or
//     its policy cannot be read for now), From becomes `"NAME via
//     DOMAIN" <forwarded@DOMAIN>`, in its place, with a Reply-To of the
//     original authors unless the message has one, as mailing lists do:
//     the original domain's policy would otherwise have the forward
//     refused, since this server cannot pass its DKIM or SPF check. NAME
//     is the first author's display name (else their address with " at "
//     for "@"), on one line, at most 64 characters; the fields are
//     written from parsed addresses (net/mail), never copied, so a
//     hostile name cannot add a field;
//   - a message without a Message-ID gets one made from its content (the
//     same message, delivered twice, gets the same one);
//   - the intake's forward mode removes Return-Path and the X-Postline-*
//     fields other than the loop marks, and refuses bare CR and NUL.
//
// The sending side signs it with the receiving domain's DKIM key, as the
// domain's own sends, applies no tracking, and gives it an envelope
// sender of the domain's own: the per-delivery bounce address (VERP)
// under its authentication domain, or under the domain itself, whose MX
// is this server. A forward's bounces therefore come back here and are the
// forward's (bounced entries, the destination on the domain's bounce
// list), never the original sender's: the purpose of SRS, without
// carrying the original sender along.
//
// # Refusals
//
// Each forward's outcome goes into the `received` log entry: `queued`
// with the message_id of the queued message (its own queued, delivered
// or bounced entries follow in the domain's log, the destination their
// recipient), or `refused` with a reason:
//
//   - a message with more than one From field: receivers differ on which
//     one they show and which one DMARC checks, so a second From at the
//     receiving domain (which signs the forward) would vouch for a first
//     one at any domain;
//   - loop: the message carries the route's mark already (whatever the
//     domain: the same route forwards for all its account's domains);
//   - the message carries Config.MaxForwards marks or more
//     (--inbound-max-forwards, default 10): forwards through other
//     routes, or other Postline servers, in a circle;
//   - the intake's refusals: the destination suppressed (bounce or
//     unsubscribe list of the receiving domain), the account's daily
//     volume spent, a domain that cannot send (not verified, no delivery
//     settings).
//
// # Sent once
//
// Receive hands forwards on before it records anything, and a failure to
// record is a 451: the sending server delivers the message again. Each
// forward is queued under an idempotency key (the sending intake's, kept
// 24 hours) made of the message as its sender wrote it (without our
// trace), the route, the recipient and the destination: a second delivery
// of the same message finds the key and its outcome, and queues nothing.
// The key is reserved before the forward is queued and its outcome
// remembered after: a process that dies between the two leaves the key
// pending, and another delivery within 10 minutes is answered 451 (it
// may be in flight); after that the forward is queued again. That window
// (a crash between two commits) is the one duplicate left.
package mailforward
