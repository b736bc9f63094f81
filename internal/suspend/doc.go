// Package suspend holds the operator's suspensions of the delivery queue:
// "send nothing to this site, from this sending domain or from this
// account, until resumed (or for this long)". A suspension is a row in the
// database, so it survives restarts and every process sees it.
//
// What a suspension does is the queue's business (package sending):
//
//   - a domain or an account: the queue's claim leaves their deliveries
//     alone (the claim reads the suspensions table every time), so they
//     stay pending or deferred, untouched: no attempt, no log entry. Once
//     the suspension ends or is resumed, the next claim takes them.
//   - a site (the destination's MX hosts, named as package shaping names
//     them, or a relay host): the site of a delivery is known only once
//     its recipient's MX hosts are looked up, so a delivery to a suspended
//     site is put back before it is sent, marked as held for the site and
//     due when the suspension ends (a minute later when it has no end, to
//     look again); resuming the site makes the deliveries held for it due
//     at once.
//
// Service.Suspended answers from a copy of the suspensions in force that
// is at most a second old (Config.Refresh), so the question costs no
// database round trip per delivery; changes made through the same Service
// are seen at once.
package suspend
