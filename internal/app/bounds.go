package app

import (
	"fmt"
	"io"
	"net"
	"net/http"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/postline/postline/internal/connlimit"
	"github.com/postline/postline/internal/spool"
)

// smtpConns are the bounds of every SMTP listener (inbound, submission).
// At the total bound the oldest session that has not authenticated (or,
// inbound, named a recipient taken here) is closed for the new one, so
// that addresses holding unauthenticated sessions cannot lock every
// tenant out.
func (a *App) smtpConns() connlimit.Config {
	c := a.Config
	return connlimit.Config{Max: c.SMTPMaxConnections, PerIP: c.SMTPMaxConnectionsPerIP, Evict: true, EvictUntilPromote: true,
		Timeouts: &connlimit.Timeouts{First: c.SMTPPreAuthTimeout, Idle: c.SMTPCommandTimeout}}
}

// inboundConns are the inbound listener's bounds: those of every SMTP
// listener, but any session may make way for a newcomer, not only one
// before its first accepted recipient: anyone can name a bounce address
// (each message's envelope sender is one), and 1,000 sessions doing so
// and then sending NOOPs held the listener, so that bounces stopped being
// taken (the third outside review).
func (a *App) inboundConns() connlimit.Config {
	c := a.smtpConns()
	c.EvictUntilPromote, c.EvictAlways = false, true
	return c
}

// boundHTTP bounds the API's listener, in total and per client address,
// so that one client cannot hold every connection and leave /readyz and
// everyone else unanswered. At the total bound the connection idle
// longest (between requests, or before its first) is closed for the new
// one (httpConnState marks them), so idle keep-alive connections from
// many addresses cannot fill it either. A reverse proxy in front is one
// address for every client: its operator raises or turns off the
// per-address bound.
func (a *App) boundHTTP(ln net.Listener) net.Listener {
	return connlimit.New(ln, connlimit.Config{Max: a.Config.HTTPMaxConnections, PerIP: a.Config.HTTPMaxConnectionsPerIP,
		Evict: true, Name: "http", Logger: a.Logger, Refuse: refuseHTTP})
}

// httpConnState tells the bounded listener which connections are idle.
func httpConnState(c net.Conn, s http.ConnState) {
	switch s {
	case http.StateNew, http.StateIdle:
		connlimit.SetEvictable(c, true)
	case http.StateActive, http.StateHijacked:
		connlimit.SetEvictable(c, false)
	}
}

// refuseHTTP answers a connection past a bound with a 503 that names it,
// before the connection is closed.
func refuseHTTP(c net.Conn, r connlimit.Refusal) {
	msg := fmt.Sprintf("Too many connections to this server (--http-max-connections, at most %d at once); try again shortly.", r.Limit)
	if r.PerIP {
		msg = fmt.Sprintf("Too many connections from your address (--http-max-connections-per-ip, at most %d at once); try again shortly.", r.Limit)
	}
	body := `{"message":` + strconv.Quote(msg) + `,"success":false}` + "\n"
	fmt.Fprintf(c, "HTTP/1.1 503 Service Unavailable\r\nContent-Type: application/json\r\nRetry-After: 1\r\nConnection: close\r\nContent-Length: %d\r\n\r\n%s", len(body), body)
}

// newSpool is the one spool every door receives bodies through, so that
// its budgets bound them all together.
func (a *App) newSpool() *spool.Spool {
	c := a.Config
	return spool.New(spool.Config{Dir: c.SpoolDir(), Memory: c.SpoolMemory, MaxBytes: c.SpoolMaxBytes,
		ProcessingMemory: c.SpoolProcessingMemory})
}

// staleSpool is how long a spool file may go unwritten before a starting
// process removes it: longer than any live session lets a client pause.
const staleSpool = 2 * time.Hour

// sweepSpool removes the spool files a killed process left behind.
func (a *App) sweepSpool() {
	n, err := spool.Sweep(a.Config.SpoolDir(), staleSpool)
	if err != nil {
		a.Logger.Warn("spool: cleaning the spool directory", "dir", a.Config.SpoolDir(), "error", err)
	}
	if n > 0 {
		a.Logger.Info("spool: removed files left by an earlier process", "dir", a.Config.SpoolDir(), "files", n)
	}
}

// closeUnreadBodies makes a request body no handler read end its
// connection's wait at once. net/http discards up to 256 KiB of it after
// the handler, waiting for it as long as ReadTimeout (5 min) with the
// connection busy, so not evictable: 2,000 requests promising a body they
// never sent filled the listener and took /readyz down (the third outside
// review). A read deadline unreadBodyGrace away bounds the discard: a
// client that is sending its body has time to finish (and reads the
// answer rather than a reset), one that is not is cut.
func closeUnreadBodies(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Body == nil || r.Body == http.NoBody || r.ContentLength == 0 {
			h.ServeHTTP(w, r)
			return
		}
		b := &eofBody{ReadCloser: r.Body}
		r.Body = b
		h.ServeHTTP(w, r)
		if !b.eof.Load() {
			http.NewResponseController(w).SetReadDeadline(time.Now().Add(unreadBodyGrace)) //nolint:errcheck // a hijacked conn is not ours to bound
		}
	})
}

// unreadBodyGrace is how long the rest of a body no handler read may take
// to arrive (net/http reads up to 256 KiB of it to keep the connection).
const unreadBodyGrace = 2 * time.Second

// eofBody notes whether its reader reached the end.
type eofBody struct {
	io.ReadCloser
	eof atomic.Bool
}

func (b *eofBody) Read(p []byte) (int, error) {
	n, err := b.ReadCloser.Read(p)
	if err == io.EOF {
		b.eof.Store(true)
	}
	return n, err
}
