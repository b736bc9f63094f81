// Package sending accepts transactional messages and delivers them: the
// intake behind POST /api/domains/{domain}/message and the workers that
// drain the queue. The queue is the deliveries table itself.
//
// # Intake
//
// A request is validated whole before anything is stored (required parts,
// from on the domain, reply_to's registrable domain, recipients, headers,
// limits). Recipients on the domain's bounce or unsubscribe list and not
// whitelisted get a `failed` entry with reason `suppressed` and no
// delivery. For the others, one transaction stores the send (content and
// attachments), one delivery row per recipient (state pending, its own
// Message-ID) and their `queued` entries; only after it commits does the
// API answer 202. An accepted message therefore survives a crash.
// Requests that reach the database while another request's transaction is
// committing are committed together in one transaction (group commit):
// each still answers only after its own rows committed, a lone request
// commits at once, and when a group's transaction fails each request is
// retried on its own.
//
// # Raw intake
//
// A message submitted whole (SMTP submission's DATA or BDAT, the /v3/
// API's messages.mime) goes through Service.PrepareRaw, whatever its door,
// so every door applies the same rules and only translates their errors:
// no bare CR or NUL (ErrUnsafeBytes, SMTP smuggling); exactly one From, at
// most one Sender, Resent-* fields in blocks with one Resent-Date and one
// Resent-From, and every From, Sender, Resent-From and Resent-Sender
// address at a verified domain the submitter may use (ErrSenderHeader);
// Bcc and the trace and authentication fields a client may not write
// (message.TraceHeaders) removed. An API send's Sender and Resent-* custom
// headers follow the same address rule. Forward mode, for received mail an
// inbound route passes on, keeps the smuggling check but not the sender
// rules, and keeps the message's trace.
//
// What a request stores is sized before its first commit: past
// MaxRenderedBytes (every recipient's rendered message with its copy of
// the attachments) it is refused whole, and its bytes count against the
// account's bytes of the UTC day (Volume, DailyBytes). A batch
// (recipient_variables: one message per recipient) is rendered once to
// be sized, then rendered again and committed in chunks of at most 100
// messages or 8 MiB; a database failure between chunks leaves the
// committed ones queued and says so (PartlyQueued).
//
// # Delivery states
//
//	pending ──claim──▶ sending ──2xx──────────────▶ delivered
//	deferred ─claim─▶    │    ──4xx / network─────▶ deferred (next_attempt_at) │ failed (max age)
//	                     │    ──5xx, recipient────▶ bounced  (+ bounce suppression)
//	                     │    ──5xx, other────────▶ failed
//	                     ├─waits its turn─────────▶ pending │ deferred, as before (not an attempt)
//	                     └─lease expired (crash)──▶ deferred, due now (rescuer)
//
// A claim moves due rows (pending or deferred, next_attempt_at ≤ now) to
// sending with a lease (owner, lease_until) and attempts+1, in one
// transaction: FOR UPDATE SKIP LOCKED on PostgreSQL so several processes
// share the work, the single writer connection (BEGIN IMMEDIATE) on
// SQLite. It records nothing: a claimed delivery may still wait for its
// turn (below). A worker extends its lease while an attempt
// runs. Outcomes are written only where the row is still leased by the
// same owner, so a worker that lost its lease cannot overwrite the next
// attempt. A delivery may be sent twice only when a process dies after
// the receiving server accepted it and before the outcome was committed.
//
// Outcomes of attempts that finish at the same time are written in one
// transaction (group commit), each with its entries and bounce
// suppression; an outcome whose lease was lost writes nothing while the
// others in its group are written. An attempt hands its slot to the next
// delivery once its outcome is known and keeps its lease, in one of
// Concurrency outcome slots, until the outcome committed (slots.go), so at
// most twice Concurrency deliveries per process are ever sent and not yet
// recorded. A group that fails is retried outcome by outcome.
//
// Per claim, the worker reads each claimed domain's settings once, checks
// suppressions for all claimed recipients (one query per domain) and loads
// the claimed sends, just before the attempts start: a change of settings
// or a new suppression applies to every delivery claimed after it.
//
// # Several recipients in one transaction
//
// Deliveries of one send and Message-ID whose copies are the same for
// every recipient (sharedCopyBlocker: no VERP, no tracking, a raw message
// or a built one with visible To and Cc) are attempted together when the
// transport can (GroupTransport): a claim joins those it took at one
// recipient domain (any domain through a relay) and tops units up
// with their due siblings (Store.ClaimSiblings) to the site's
// max_recipients_per_transaction. The unit is admitted once, built and
// signed once, and sent in one transaction; each delivery keeps its own
// lease, checks (suppression, suspension, the domain rate, which counts
// each) and outcome, recorded as a single attempt's would be, and is
// marked delivered only after the server accepted the message for it. A
// unit takes one attempt slot and one outcome slot, so what a crash can
// make us send twice is counted in transactions: at most twice
// Concurrency of them, each with up to max_recipients_per_transaction
// recipients.
//
// # Waiting for a turn
//
// Before it builds the message, an attempt asks the transport whether the
// delivery may start now (delivery.Transport.Admit, which enforces the
// traffic shaping of its egress path: connections, rates). When it may
// not, the delivery goes back to the queue (Store.Release), due when the
// transport says, with its attempt given back and nothing recorded: to
// pending when it was never tried, else to deferred. It is not an attempt,
// so it counts neither towards the retry schedule nor as a failure; the
// maximum message age still applies at its next real attempt. The worker
// looks for it again when it comes due, not only at its next poll. The
// per-domain rate (below) works the same way.
//
// # Events
//
// send (the attempt started, details.attempt: written with the attempt's
// outcome, stamped with its start, so a delivery that waited its turn
// leaves no trace and a process that dies mid-attempt leaves no `send`);
// delivered (smtp_code, smtp_message, mx_host); temporary_fail then
// deferred (next_attempt_at); permanent_fail then bounced or failed;
// failed with reason max_age_exceeded, suppressed or a configuration
// problem (suppressed and domain_removed come without `send`: nothing was
// tried).
//
// # Retry schedule
//
// After attempt n fails temporarily the next attempt is due after
// schedule[min(n, len)-1] (default 1m, 5m, 15m, 30m, 1h, 2h, 4h, 8h), or the
// receiving server's own hint when it gives a longer one, spread by Policy.Jitter
// (±10% in the server); a message older
// than the maximum age (default 5 days) at its next due time fails instead.
//
// # Suspensions
//
// An operator's suspension (package suspend) holds deliveries without
// making them attempts. The claim leaves the deliveries of a suspended
// sending domain or account where they are (pending or deferred, attempt
// count and log untouched) for as long as the suspension is in force.
// A delivery to a suspended site, known only once its destination is
// named, is put back just before it would be sent (Holds, hold.go): its
// attempt is given back, it is due when the suspension ends (a minute
// later when it has no end) and marked held for the site, so that
// resuming the site makes it due at once (Queue.ResumeOf). Queue also
// retries and fails (bounce) waiting deliveries by site, domain or
// account (queuecontrol.go).
//
// # What is kept of a message
//
// Postline keeps what it accepted (the send: its fields and attachments,
// or the client's raw message for SMTP submission), not the bytes it
// sent: each attempt builds the recipient's copy (compose) and signs it.
// Worker.Rebuild builds a delivery's copy the same way without signing or
// sending it (the console's message page, GET .../messages/{id}/raw):
// tracking tokens are deterministic, so the copy has the links the
// recipient got; the DKIM signature, made at sending, is not kept. A
// send's content is kept as long as the log: once every delivery of it
// ended longer ago than the log's retention, the log's pruning empties it
// (Service.PruneContent), keeping its links for click tracking and its
// rows for tracking, unsubscribes and late complaints; Rebuild then
// answers ErrPruned.
//
// # Outbound rate
//
// Each domain may send at most DomainRate messages a minute. The budget is
// taken at the moment of sending through the shared rate limiter, so it
// holds across workers and processes; a delivery over budget goes back to
// the queue until the window ends without counting an attempt.
package sending
