package simnet

import (
	"errors"
	"fmt"
	"net"
	"net/netip"
	"sync"
	"time"

	"github.com/postline/postline/internal/smtptest"
)

// admitter is the provider's listener as the SMTP server sees it: every
// connection is admitted or refused (ConnectionReply at the greeting)
// before go-smtp sees it, on a goroutine of its own so that a connection
// waiting out ConnectionGrace holds up no other.
type admitter struct {
	net.Listener
	p     *Provider
	ready chan net.Conn
	done  chan struct{}
	once  sync.Once
}

func newAdmitter(ln net.Listener, p *Provider) *admitter {
	a := &admitter{Listener: ln, p: p, ready: make(chan net.Conn), done: make(chan struct{})}
	go a.loop()
	return a
}

func (a *admitter) loop() {
	for {
		c, err := a.Listener.Accept()
		if errors.Is(err, net.ErrClosed) {
			return
		}
		if err != nil { // out of descriptors and the like: try again
			time.Sleep(5 * time.Millisecond)
			continue
		}
		go a.admit(c)
	}
}

// admit counts c against its client's connections and hands it to the
// SMTP server, or refuses it.
func (a *admitter) admit(c net.Conn) {
	from := remoteAddr(c)
	id, ok := a.p.open(from)
	if !ok {
		r := a.p.cfg.ConnectionReply
		fmt.Fprintf(c, "%d %s\r\n", r.Code, replyText(r))
		c.Close()
		return
	}
	tc := &trackedConn{Conn: c, p: a.p, id: id, client: from}
	select {
	case a.ready <- tc:
	case <-a.done:
		tc.Close()
	}
}

// Accept returns the next admitted connection.
func (a *admitter) Accept() (net.Conn, error) {
	select {
	case c := <-a.ready:
		return c, nil
	case <-a.done:
		return nil, net.ErrClosed
	}
}

// Close stops accepting. It is safe to call more than once.
func (a *admitter) Close() error {
	a.once.Do(func() { close(a.done) })
	return a.Listener.Close()
}

// trackedConn is an admitted connection: it counts as open until it is
// closed, by either side (go-smtp closes it when it reads the client's
// close, and after its reply to QUIT).
type trackedConn struct {
	net.Conn
	p        *Provider
	id       uint64
	client   netip.Addr
	once     sync.Once
	messages int // accepted on this connection; guarded by p.mu
}

func (c *trackedConn) Close() error {
	err := c.Conn.Close()
	c.once.Do(func() { c.p.closed(c.client) })
	return err
}

// open counts a new connection from addr: admitted with its number, or
// refused (a violation) when addr already holds MaxConnections. A
// connection that would exceed the limit or raise addr's peak first waits
// up to ConnectionGrace for one of addr's connections to end, since the
// client may have finished with it (QUIT answered) before the provider
// sees it close.
func (p *Provider) open(addr netip.Addr) (uint64, bool) {
	limit := p.cfg.MaxConnections
	var deadline time.Time
	p.mu.Lock()
	defer p.mu.Unlock()
	c := p.client(addr)
	for c.open > 0 {
		n := c.open + 1
		if n <= c.peak && (limit == 0 || n <= limit) {
			break
		}
		if deadline.IsZero() {
			deadline = time.Now().Add(p.net.cfg.ConnectionGrace)
		}
		wait := time.Until(deadline)
		if wait <= 0 {
			break
		}
		changed := c.changed
		p.mu.Unlock()
		t := time.NewTimer(wait)
		select {
		case <-changed:
		case <-t.C:
		}
		t.Stop()
		p.mu.Lock()
	}
	n := c.open + 1
	c.conns++
	c.peak = max(c.peak, n)
	if limit > 0 && n > limit {
		now := time.Now()
		p.violate(c, Violation{Time: now, Client: addr, Kind: ConnectionLimit, Count: n, Limit: limit})
		p.refusals = append(p.refusals, Refusal{Time: now, Provider: p.cfg.Name, Client: addr,
			Stage: "connect", Reply: p.cfg.ConnectionReply, Cause: CauseConnections})
		return 0, false
	}
	c.open = n
	return p.conns.Add(1), true
}

// closed ends one of addr's connections.
func (p *Provider) closed(addr netip.Addr) {
	p.mu.Lock()
	defer p.mu.Unlock()
	c := p.client(addr)
	c.open--
	close(c.changed)
	c.changed = make(chan struct{})
}

// remoteAddr is c's client address, IPv4 unmapped.
func remoteAddr(c net.Conn) netip.Addr {
	if ap, err := netip.ParseAddrPort(c.RemoteAddr().String()); err == nil {
		return ap.Addr().Unmap()
	}
	return netip.Addr{}
}

// replyText is a reply's enhanced code and text, as on the wire.
func replyText(r smtptest.Reply) string {
	e := r.Enhanced
	if e == [3]int{} {
		e = [3]int{r.Code / 100, 0, 0}
	}
	msg := r.Message
	if msg == "" {
		msg = "refused"
	}
	return fmt.Sprintf("%d.%d.%d %s", e[0], e[1], e[2], msg)
}
