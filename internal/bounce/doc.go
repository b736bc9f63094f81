// Package bounce parses inbound bounce reports and complaints into one
// Report per failed or complained-about recipient. It is pure: no SMTP
// listener and no storage here. The caller matches a report to a delivery
// by the envelope recipient of the bounce (the VERP address made by
// sending.VERPAddress, checked with sending.ParseVERP) and, as a fallback,
// by Report.OriginalMessageID.
//
// # Kinds
//
//   - KindPermanent: the recipient is given up on. In an RFC 3464 delivery
//     status notification that is "Action: failed", whatever the Status
//     class (a message that timed out after 4xx replies has failed too). In
//     a text bounce it is any bounce that does not read as a delay warning.
//     The caller records `bounced` and adds a bounce suppression.
//   - KindTemporary: delivery is still being retried: "Action: delayed", or
//     a text bounce that says so ("will retry", "delayed", ...). The caller
//     records `temporary_fail` and suppresses nothing.
//   - KindComplaint: an RFC 5965 ARF feedback report (Feedback-Type abuse,
//     fraud, ...): the recipient marked the message as spam. Status is empty.
//   - KindUnknown: the message is a delivery report or reads as a bounce,
//     but no failed recipient could be found in it. The caller should log
//     it and change nothing.
//
// A DSN group without an Action is classed by its Status (5.x.x permanent,
// 4.x.x temporary, 2.x.x skipped). "delivered", "relayed" and "expanded"
// recipients are not failures and give no report; a DSN listing only those
// gives an empty slice, as does any message that is not a bounce or a
// complaint (a reply, an auto-reply, spam): callers need not tell "no
// report" from "not a report".
//
// # Standard reports
//
// A message/delivery-status part (RFC 3464 section 2) gives one report per
// per-recipient group: Recipient is Original-Recipient when present (the
// address we sent to) else Final-Recipient; Status is the leading code of
// Status (or the one found in Diagnostic-Code); DiagnosticCode is verbatim
// with folding removed; RemoteMTA is the host name of Remote-MTA without its
// "dns;" type or trailing dot. A message/feedback-report part gives one
// complaint per Original-Rcpt-To, or one for the first To address of the
// attached original message. OriginalMessageID comes from the attached
// message/rfc822 or text/rfc822-headers part, else the copy of the original
// below a text bounce's marker line, else In-Reply-To, else References. The
// multipart/report report-type parameter is not trusted: parts are found by
// their own content types.
//
// # Non-standard bounces
//
// Without such a part, a message reads as a bounce when it has an
// X-Failed-Recipients header, comes from MAILER-DAEMON or postmaster, has a
// bounce-like Subject ("Undeliverable", "failure notice", "Mail delivery
// failed", ...) or contains a known phrase (qmail's "qmail-send program",
// Exim's "mail delivery software", Postfix's "This is the mail system at
// host"). Its text (text/plain parts, else text/html with tags stripped)
// up to the copy of the original message is then scanned for recipient
// lines: "<addr>:" (qmail, Postfix), a line holding only an address (Exim
// indents it; Exchange lists it above its "#550 5.1.1" diagnostic), or
// "addr (...)". The lines below a recipient line, up to a blank line, are
// its diagnostic. Status is the first RFC 3463 code found there (5.1.1,
// not part of an IP address), else a reply code's class as 5.0.0 or 4.0.0;
// DiagnosticCode is the reply from its code on with its indented
// continuation lines, as "smtp; 550 ...". Without recipient lines,
// X-Failed-Recipients names the recipients, and the codes come from the
// whole text. These are heuristics: a report from them is as good as the
// text it was read from.
//
// # Limits
//
// Parse reads at most maxBytes (DefaultMaxBytes when maxBytes <= 0) and
// returns ErrTooLarge beyond; it visits at most MaxParts MIME entities
// nested at most MaxDepth deep, returns at most MaxRecipients reports, reads
// at most 256 KiB of each part and keeps at most MaxFieldLen bytes of any
// field value. Malformed or truncated input is parsed as far as it goes and
// never makes Parse fail or panic; the only errors are ErrTooLarge and a
// failing reader.
package bounce
