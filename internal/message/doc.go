// Package message builds the RFC 5322 message sent to one recipient and
// DKIM-signs it. It is pure: no storage, no network; the delivery worker
// builds, signs and hands the bytes to SMTP.
//
// # Structure
//
// Build chooses the smallest MIME tree (RFC 2045/2046) for the content:
//
//   - text only: one text/plain part;
//   - text and HTML: multipart/alternative, text/plain then text/html
//     (the preferred format last, RFC 2046 §5.1.4);
//   - with attachments: multipart/mixed holding the above first, then each
//     attachment, Content-Disposition: attachment, base64.
//
// Boundaries are derived from the Message-ID, so the same Params always give
// the same bytes (a retried job re-sends what was logged, and golden tests are
// stable); they start with "=_", which no quoted-printable or base64 body can
// contain.
//
// # Encodings
//
// Every line ends in CRLF and none exceeds 998 octets (RFC 5322 §2.1.1).
// Text and HTML are UTF-8, quoted-printable: lines stay under 76 octets
// whatever the body holds, line breaks (LF, CRLF or CR) are kept as CRLF, and
// the message passes 7-bit relays. Non-ASCII in the Subject, the sender's
// display name and custom header values is RFC 2047 encoded; addresses are
// written as given (a UTF-8 local part needs SMTPUTF8, which delivery
// negotiates). Attachment names are sanitized (SanitizeFilename) and, when
// not ASCII, written as RFC 2231 in Content-Disposition and RFC 2047 in
// Content-Type's name.
//
// # Headers
//
// In order: From, To (the one recipient), Reply-To, Subject, Date,
// Message-ID, List-Unsubscribe and List-Unsubscribe-Post (RFC 8058), the
// sender's custom headers sorted by name, the service's extra headers,
// MIME-Version and the Content-* fields. Custom headers may not use a name in
// ProtectedHeaders. Header injection is impossible by construction: every value
// is checked for CR, LF and other controls before it is written, and folding
// only ever inserts CRLF before an existing space. Problems a sender can fix are
// *apperr.Error values with code Invalid naming the request field (from,
// from_name, to, reply_to, subject, headers, attachments), so the HTTP layer
// can answer 422 with the same checks (CheckHeaderName, CheckHeaderValue)
// before any job is queued.
//
// # DKIM
//
// Signer signs with rsa-sha256 (RFC 6376, RFC 8301: at least 1024-bit keys)
// under d= the sending domain, or its authentication domain, which publishes
// the same key. It covers From, To, Subject, Date, Message-ID, Reply-To,
// MIME-Version, Content-Type, List-Unsubscribe and List-Unsubscribe-Post when
// present, each listed once more than it occurs so that an added copy breaks
// the signature (RFC 6376 §8.15); the body is covered whole (no l= tag).
//
// Canonicalization is relaxed/relaxed (RFC 6376 §3.4.2, §3.4.4): relays
// legitimately refold headers, change header-name case and strip or add
// trailing white space, which break "simple" signatures without changing
// what the recipient reads; relaxed tolerates exactly those changes and no
// change of content.
package message
