// Package receiving is what happens to mail sent to an account's inbound
// domains, between the SMTP door (internal/inbound) and the account's
// routes (internal/inboundroute). It never opens a socket: the door hands
// it the envelope and the message; DNS goes through the resolver it is
// given.
//
// # At RCPT
//
// Recipient decides on an address. Its domain must be verified with
// inbound on (domain.Service.Receiving), else it is not ours (550 5.1.1).
// Only the routes of the domain's account are read, so another account's
// routes never see its mail. Walking them in evaluation order with the
// recipient alone: a catch_all() route, or a route that decides on the
// recipient alone and matches, takes it (Accept); a route whose
// match_recipient filters match but whose match_header filters need the
// message leaves the decision to after DATA (AfterData); no match at all
// is NoRoute (550 5.1.1). Nothing is accepted that no route takes.
//
// # At DATA
//
// Receive authenticates the message once (internal/mailauth: SPF, DKIM,
// DMARC), renames Authentication-Results fields that claim this server's
// authserv-id, and adds its own Authentication-Results and a Received
// field on top. Then, for each recipient, the routes are evaluated with
// the message's header (inboundroute.Evaluate) and their actions run:
//
//   - store(): the message is kept (table inbound_messages) for the
//     retention, readable through the API and the console; an account
//     holds at most Config.StoreBytesPerAccount of them (ErrStoreFull, a
//     temporary refusal, past it);
//   - forward(URL), forward(address), store(notify=URL)'s notification:
//     handed to the Forwarder (Forwarders: one side for URLs and
//     notifications, one for addresses). The server wires
//     internal/inboundpost as the URL side (posts queued in an outbox,
//     outcome "queued") and internal/mailforward as the address side
//     (outcome "queued" with the forward's message_id, or "refused" with a
//     reason); a side not wired carries none out and says so (outcome
//     "unsupported"); the message is still accepted and logged;
//   - stop(): no later route (Evaluate stops there).
//
// Every recipient gets one `received` log entry in its domain's log, in the
// transaction that stores its message: the routes that took it and each
// action's outcome (stored, unsupported, skipped, done, queued, refused).
// A recipient no route takes after DATA is ErrNoRoute when no recipient of
// the message is taken (550), else ErrRoutesChanged (451: the routes
// changed between RCPT and DATA; the retry is decided afresh): never
// accepted and dropped.
package receiving
