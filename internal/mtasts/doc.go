// Package mtasts finds a recipient domain's MTA-STS policy (RFC 8461):
// the TXT record at _mta-sts.DOMAIN announcing it ("v=STSv1; id=...;"),
// the policy itself from https://mta-sts.DOMAIN/.well-known/mta-sts.txt,
// and a cache of policies in the database, so that a policy once seen
// keeps protecting the domain's mail when the TXT record or the HTTPS
// server later fails to answer (the point of MTA-STS: an attacker who can
// block those must not be able to switch it off).
//
// # Finding the policy (Service.Policy)
//
//  1. The TXT record: records not starting with "v=STSv1;" are ignored;
//     anything but exactly one valid record means "no record" (§3.1).
//  2. A cached policy that has not expired (max_age after it was fetched)
//     is used as is while the record's id is the one it was fetched under
//     and its refresh time (half its max_age, at most a day, after the
//     fetch) has not come. It is also used, whatever its refresh time,
//     when there is no record now (§5.1: a domain drops MTA-STS by
//     publishing mode none first, so a vanished record is no reason to
//     stop) or the DNS lookup failed.
//  3. Otherwise (a new id, no cached policy, expired, or time to refresh)
//     the policy is fetched: HTTPS on Config.Port (443), certificate
//     verified against Config.RootCAs (nil: the system's roots, which Go
//     reads from SSL_CERT_FILE when set), no redirects, 200 with a
//     text/plain body of at most 64 KiB, within Config.Timeout. A fetched
//     policy is stored under the record's id until its max_age passes. If
//     the fetch fails, an unexpired cached policy is used and the fetch is
//     not tried again for 5 minutes; without one, the domain has no policy
//     (and the fetch is not tried again for 5 minutes either).
//
// Each process also remembers the answer for a domain for up to a minute,
// so that a burst of deliveries asks the database once.
//
// # Where the fetch may connect
//
// The domain is the recipient's, chosen by a tenant, so mta-sts.DOMAIN is
// resolved through Config.Resolver (never the system's) and never dialled
// at a loopback, private, link-local or other non-public address
// (internal/netguard), checked again on the socket about to connect,
// unless Config.AllowPrivate (postline's --delivery-allow-private, for
// tests and simulated networks).
//
// # The policy
//
// Parse reads "key: value" lines (CRLF or LF): version STSv1, mode
// enforce, testing or none, max_age in seconds (at most 31557600), and
// one or more mx patterns (none needed in mode none). Unknown keys are
// ignored; the first of a repeated key counts (mx excepted). Policy.Matches
// checks an MX host against the patterns (§4.1): an exact name, or
// "*.example.com" for exactly one more label on the left. What to do with
// the policy (use only matching MX hosts, require a verified certificate
// in enforce mode, report only in testing mode) is package delivery's.
package mtasts
