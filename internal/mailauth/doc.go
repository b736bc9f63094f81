// Package mailauth authenticates a received message: SPF for the client
// address and the MAIL FROM (RFC 7208), every DKIM signature (RFC 6376),
// and DMARC (RFC 7489): whether an SPF pass or a DKIM pass is aligned with
// the From domain, and that domain's published policy. The results are
// recorded, never enforced: what to do with a failing message is the
// reader's (a route's receiver) to decide, as with Mailgun's inbound.
//
// Every lookup goes through a Resolver (the process's DNS client), so
// that tests answer from their own DNS server. A lookup that fails for
// now gives temperror, a record that cannot be read permerror, as RFC
// 8601 names them.
//
// Header renders the results as an Authentication-Results field (RFC
// 8601) under the receiving server's authserv-id; Untrust renames the
// Authentication-Results fields a message arrived with that claim that
// id, since only the receiving server may write them (RFC 8601 §5).
package mailauth
