// Package delivery is the SMTP transport: it hands one message for one
// recipient to the next hop and says, in one error type, what happened.
// The queue and the retry policy live elsewhere (package sending); this
// package keeps no state beyond open connections.
//
// # Routing
//
// A Route in ModeSMTP sends through a relay: Route.Host (a name or an IP)
// on Route.Port. A Route in ModeDirect sends to the recipient domain's MX
// hosts, by preference (equal preferences in the resolver's order), on
// Config.MXPort:
//
//   - no MX records (NoData): the domain itself is the implicit MX
//     (RFC 5321 §5.1);
//   - a null MX (RFC 7505): permanent, 5.1.10;
//   - NXDOMAIN: permanent, 5.1.2;
//   - a DNS timeout or server failure: temporary, 4.4.3.
//
// Every name, MX hosts and relay names alike, is resolved through
// Config.Resolver and the address dialled directly, never through the
// system resolver, so that delivery agrees with validation and tests serve
// their own zones. Up to 5 MX hosts and 4 addresses per host are tried. A
// failure to reach or open a session with a host (connect, tls and dns
// stages, 4xx or 5xx greeting or EHLO) moves on to the next; an answer
// about the message or the recipient (MAIL, RCPT, DATA) ends the attempt.
// When all hosts fail, the most preferred temporary failure is returned if
// there is one, else the last failure.
//
// Direct delivery never dials a non-public address (loopback, private,
// link-local, metadata and the other ranges of internal/netguard), MX
// hosts and implicit-MX addresses alike, unless Config.AllowPrivate: such
// addresses are skipped, checked again on the socket about to connect (so
// a name rebinding there fails too), and a host with no other address
// fails permanently, "MX resolves to a non-public address" (guard.go).
// Relays are the operator's choice and are not checked.
//
// # TLS policy
//
// Relays (the operator configured them, credentials travel to them):
// Route.TLS "tls" is implicit TLS, "starttls" (the default) requires
// STARTTLS, "none" is plain text. Certificates are verified against
// Config.TLSConfig (system roots by default) unless
// Config.InsecureSkipRelayVerify. A relay that does not offer STARTTLS when
// required is refused (temporary, 4.7.10): the operator asked for
// encryption, so nothing is sent in clear, but the cause (a misconfigured
// or downgraded relay) is not the recipient's and may be fixed, so the
// queue keeps the message. Certificate and handshake failures are likewise
// temporary (4.7.5).
//
// MX hosts, in this order (tlspolicy.go, tlscheck.go):
//
//  1. DANE (RFC 7672), unless Route.DirectTLS.DisableDANE: when the
//     resolver returns TLSA records for _PORT._tcp.MXHOST (PORT is
//     Config.MXPort) with the AD bit (it validated them with DNSSEC), and
//     the domain's MX answer had it too (RFC 7672 §2.2.1: else whoever
//     forged the MX records could name a host with TLSA records of their
//     own, and so get past MTA-STS), the host must offer STARTTLS and its
//     certificate match one of the usable records (DANE-EE or DANE-TA,
//     package dane); records present but none usable still require
//     STARTTLS, without authentication. MTA-STS is
//     then not consulted (RFC 8461 §2). Unauthenticated records are
//     ignored. A failed TLSA lookup defers the host (4.4.3) when its
//     address records are authenticated (an attacker may be hiding the
//     records), and is ignored otherwise (a broken server of an unsigned
//     zone).
//  2. MTA-STS (RFC 8461), unless Route.DirectTLS.DisableMTASTS or
//     Config.MTASTS is nil: the recipient domain's policy (package mtasts,
//     fetched and cached in the database). In enforce mode only MX hosts
//     the policy lists are contacted, each must offer STARTTLS and present
//     a certificate that verifies for its name against Config.RootCAs (the
//     system's roots by default, SSL_CERT_FILE when set). In testing mode
//     delivery goes on as without a policy, and what enforce would have
//     refused (an unlisted host, no STARTTLS, a certificate that does not
//     verify) is reported in TLSOutcome.Report and the operator's log.
//     Mode none is no policy.
//  3. Otherwise Route.DirectTLS.Mode, KumoMTA's enable_tls:
//     OpportunisticInsecure (the default: STARTTLS when offered, any
//     certificate, plain text when it is not offered or the handshake
//     fails, RFC 7435), Opportunistic (when offered, verified, no
//     plain-text retry), Required, RequiredInsecure, Disabled.
//
// A refusal under a policy or a verifying mode is temporary (4.7.5 for a
// certificate or an unlisted host, 4.7.10 when STARTTLS is not offered),
// names the policy ("MTA-STS policy of example.com (enforce): ...",
// "DANE: ...", "TLS mode Required: ..."), comes before anything is sent
// under the connection, and moves on to the next MX host. Certificates
// are checked inside the handshake, so a refused one ends it with an alert.
//
// Result.TLS and Error.TLS report the outcome (TLSOutcome: the version,
// whether the certificate was verified, the policy), relays included. A
// pooled connection is reused for a message whose plan requires more
// (verification, a policy) only if it was opened under the same
// requirements; otherwise it is closed and a new one opened in its slot.
//
// # Transaction
//
// EHLO with Config.HeloName; AUTH PLAIN (or LOGIN if only LOGIN is offered)
// when Route.User is set, else the relay's AUTH is not used; MAIL FROM with
// SIZE, BODY=8BITMIME when the server offers 8BITMIME, and SMTPUTF8 when
// an address or the header is non-ASCII and the server offers it (a
// non-ASCII address to a server without it is refused: permanent, 5.6.7);
// RCPT TO the one recipient; DATA. SendTicketAll names several recipients
// of one message in one transaction (at most the path's
// max_recipients_per_transaction, default 50 as Postfix's
// default_destination_recipient_limit): a RCPT refused with other than
// 421 refuses that recipient alone (its own Outcome) and the others go
// on; DATA is sent when one was accepted and its reply is theirs; a
// failure of the connection, MAIL or DATA is every other recipient's.
// The transaction counts as one message under max_message_rate and
// max_deliveries_per_connection. A message with 8-bit bytes to a server
// without 8BITMIME is sent as is: 7-bit encoding is the message builder's
// job.
//
// # Errors
//
// Send, SendTicket and Admit return only *Error values; Classify turns
// any error into one (a non-nil err never gives nil). Code is set only
// when a server replied. Message never names the addresses and ports of
// a network error (it reaches tenants); Err keeps them for the operator.
//
//	cause                                   Code  Enhanced  verdict    Stage
//	4xx reply ("450 4.2.0 greylisted")      450   4.2.0     temporary  rcpt
//	5xx reply ("550 5.1.1 no such user")    550   5.1.1     permanent  rcpt
//	  ("552 5.3.4 message too big")         552   5.3.4     permanent  data
//	  ("535 5.7.8 bad credentials")         535   5.7.8     permanent  auth
//	connection refused, connect timeout     0     4.4.1     temporary  connect
//	connection lost, I/O timeout            0     4.4.2     temporary  any
//	TLS handshake or certificate failure    0     4.7.5     temporary  tls
//	relay lacks required STARTTLS           0     4.7.10    temporary  tls
//	MX refused by a TLS policy (MTA-STS     0     4.7.5     temporary  tls
//	  enforce, DANE, a verifying mode)
//	MX lacks STARTTLS a policy requires     0     4.7.10    temporary  tls
//	TLSA lookup failed at a signed host     0     4.4.3     temporary  dns
//	relay lacks AUTH PLAIN and LOGIN        0     4.7.0     temporary  auth
//	DNS timeout, SERVFAIL                   0     4.4.3     temporary  dns
//	domain does not exist (NXDOMAIN)        0     5.1.2     permanent  dns
//	null MX                                 0     5.1.10    permanent  dns
//	MX host without addresses               0     5.4.4     permanent  dns
//	relay name without addresses            0     4.4.4     temporary  dns
//	non-ASCII address, no SMTPUTF8          0     5.6.7     permanent  mail
//	MX at non-public addresses only         0     5.4.4     permanent  connect
//	bare CR or NUL in the message           0     5.6.0     permanent  data
//	invalid Route                           0     5.3.5     permanent  connect
//	Route.Pool not in Config.Egress         0     4.3.5     temporary  connect
//	site backed off after consecutive       0     4.4.1     temporary  connect
//	  failed connections (Admit)
//	no connection free in time (Wait set:   0     4.4.5     temporary  connect
//	  not an attempt)
//	ctx canceled or past its deadline       0     4.4.7     temporary  any
//	Transport closed (ErrClosed)            0     4.3.2     temporary  connect
//	anything else                           0     4.0.0     temporary  any
//
// Error.RecipientRejected tells a refusal of the recipient (bounce and
// suppress) from other permanent failures; Error.RetryAfter reads a delay
// hint ("try again in 5 minutes") from the reply text.
//
// # Egress paths
//
// Connections are pooled per egress path: one site through one egress
// source, or one relay. A site is the set of a recipient domain's MX hosts
// (named as shaping.SiteName does), so every domain hosted at the same MX
// hosts shares one path; a domain whose shaping section says mx_rollup =
// false is a site of its own. The source is Route.Source, or the one
// Route.Pool chooses (Config.Egress, package egress): per site and pool,
// a smooth weighted round robin over the pool's sources whose warm-up cap
// for the UTC day (Config.Now) has room, counted in Config.Warmup when the
// source is chosen and given back unless the delivery went out through
// the source (a connection dialled from it, or a transaction begun on a
// reused one): a ticket released, a turn that did not come, a context
// that ended while it waited, an MX host that could not be resolved or
// dialled from the source give it back; a delivery not attempted also
// gives back its pick in the round robin (so that what is sent keeps the
// weights when one source's path turns deliveries away more often); when
// none has room, Admit says to wait until the next UTC day. A source's
// source_address is bound for direct connections (only
// MX addresses of its family are dialled) and its ehlo_domain said
// instead of Config.HeloName; Result and Error name it. A relay's path
// is its host, port, TLS mode and credentials. A path's connections go to
// any MX host of its site, dialled by preference as above.
//
// Config.Shaping gives the traffic-shaping rules (package shaping). Each
// admission reads the settings in force for the recipient's domain, its MX
// hosts and the source (Rules.For), so a reloaded file applies to the next
// delivery; a relay takes the settings of its host name. Each path
// enforces, in this process (DefaultShaping lists the defaults):
//
//   - connection_limit (default Config.MaxConnsPerDest, 4; for a relay
//     Config.MaxConnsPerRelay): connections busy, idle or being dialled.
//     A connection counts until the reply to its QUIT arrives or it is
//     closed.
//   - max_connection_rate: new connections, and max_message_rate: message
//     starts. Both are spaced evenly (a burst of 1 unless the rate says
//     max_burst), so no window of the rate's period holds more than its
//     count.
//   - max_deliveries_per_connection: after that many messages a
//     connection is closed with QUIT instead of going back to the pool.
//   - idle_timeout (default Config.IdleTimeout, 30s): how long an unused
//     connection is kept.
//   - consecutive_connection_failures_before_delay (default 100, as
//     KumoMTA's): after that many deliveries in a row that could open no
//     connection to any host of the site, the path dials nothing for
//     Config.FailureDelay (1m): Admit fails its deliveries at once,
//     temporary, 4.4.1 "no answer from any host", and the queue defers
//     each on its own retry schedule, as KumoMTA does with its ready
//     queue. An opened connection ends the count.
//   - enable_tls, enable_mta_sts, enable_dane: the route's DirectTLS where
//     it sets nothing (see TLS policy).
//
// provider_connection_limit and provider_max_message_rate bound every
// path of a provider together, in this process. A path, with its rates
// and its count of failures, outlives its connections, so an emptied pool
// does not start a rate over; it is forgotten an hour after its last use.
//
// # Admission
//
// Admit asks, without waiting, whether a delivery may start now. It
// resolves the next hop (MX lookups go through the resolver's cache),
// books the message's start under the rates (at most a second ahead) and
// takes a connection: an idle one, a free slot, or one of connection_limit
// places in the path's queue, whose deliveries are handed connections in
// order as others finish with them. It returns a Ticket for SendTicket
// (Release gives an unused one back), or how long to wait: nothing was
// attempted, so the caller puts the delivery back in its queue without
// counting an attempt. Deliveries turned away one after another get later
// and later times, a path's pace apart (the rate's interval, or how long a
// delivery holds a connection over connection_limit), between 100ms and an
// hour, so that they come back spread out rather than together. A
// delivery holding a place in the queue waits at most 15s for its
// connection; then SendTicket returns an Error with Wait set, again not an
// attempt. A worker is thus never held by a path at its limits longer
// than that, and one throttled site cannot starve the others.
//
// Send admits and sends in one call, waiting for its turn as long as its
// ctx allows.
//
// # Connection reuse and bounds
//
// After a delivered message the connection goes back to the path (to the
// first delivery waiting for one, else idle) as is (the end of DATA resets
// the transaction, RFC 5321 §4.1.1.4); after a refused MAIL, RCPT or DATA
// it goes back only if RSET succeeds; after any other error it is closed,
// never reused. Idle connections are closed (with QUIT) after the path's
// idle_timeout. A reused connection is not probed with NOOP, which would
// cost a round trip per message; instead, if MAIL fails on it with a
// network error or a 421 (the server timed it out or limits messages per
// connection), a new connection is opened in its place, which is safe
// since nothing was accepted yet. A connection opened for another domain
// of the site is reused only under the same TLS requirements (see TLS
// policy).
//
// Every step is bounded: DialTimeout per connect, CommandTimeout per
// command, handshake and read or write of the message, and the ctx given
// to Send or SendTicket, whose end aborts the I/O in progress at once.
package delivery
