// Package connlimit bounds a listener so that no client can exhaust the
// process's file handles: a Listener holds at most Max connections open
// and at most PerIP from one client address (an IPv6 client's /64), and refuses the others at
// once (the Refuse hook may say why first, as SMTP's 421 does).
//
// For line protocols (SMTP) a Listener can also govern how long a peer may
// stay silent: every Conn it returns starts in a first phase with a fixed
// end (Timeouts.First from accept: the time a client gets to authenticate)
// and, once Promote is called, allows Timeouts.Idle between reads. The
// server on top cannot stretch these: its own read deadlines are ignored,
// since go-smtp sets one deadline for every state of a session.
//
// A Listener without Timeouts passes deadlines through, for net/http.
package connlimit
