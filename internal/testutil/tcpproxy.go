package testutil

import (
	"net"
	"sync"
	"testing"
	"time"
)

// TCPProxy forwards connections from a loopback port to a target, and
// injects the two faults a network dependency has: Pause freezes it (open
// connections stay open but no byte moves, new ones are accepted and wait:
// a server that hangs), Cut takes it down (every connection is closed and
// new ones are refused: a server that stopped). Resume heals either.
type TCPProxy struct {
	t      testing.TB
	target string
	addr   string

	mu     sync.Mutex
	ln     net.Listener  // nil while cut
	open   chan struct{} // closed while bytes may flow; replaced by Pause
	links  map[*link]struct{}
	closed bool
	wg     sync.WaitGroup
}

// NewTCPProxy listens on 127.0.0.1 and forwards to target (host:port on
// loopback); it stops at the test's cleanup.
func NewTCPProxy(t testing.TB, target string) *TCPProxy {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	open := make(chan struct{})
	close(open)
	p := &TCPProxy{t: t, target: target, addr: ln.Addr().String(), open: open, links: map[*link]struct{}{}}
	p.serve(ln)
	t.Cleanup(p.close)
	return p
}

// Addr is the proxy's host:port.
func (p *TCPProxy) Addr() string { return p.addr }

// Pause stops forwarding: bytes in flight wait, and so do new connections.
func (p *TCPProxy) Pause() {
	p.mu.Lock()
	defer p.mu.Unlock()
	select {
	case <-p.open:
		p.open = make(chan struct{})
	default: // paused already
	}
}

// Cut closes every connection and refuses new ones (the port is closed).
func (p *TCPProxy) Cut() {
	p.mu.Lock()
	ln := p.ln
	p.ln = nil
	links := make([]*link, 0, len(p.links))
	for l := range p.links {
		links = append(links, l)
	}
	p.mu.Unlock()
	for _, l := range links {
		l.end()
	}
	if ln != nil {
		ln.Close()
	}
}

// Resume heals a Pause (the held bytes go on) or a Cut (the same port
// accepts again).
func (p *TCPProxy) Resume() {
	p.t.Helper()
	p.mu.Lock()
	select {
	case <-p.open:
	default:
		close(p.open)
	}
	relisten := p.ln == nil && !p.closed
	p.mu.Unlock()
	if !relisten {
		return
	}
	var ln net.Listener
	var err error
	// The port was closed a moment ago; its reuse is allowed at once, but
	// give the kernel a few tries.
	for i := 0; i < 50; i++ {
		if ln, err = net.Listen("tcp", p.addr); err == nil {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	if err != nil {
		p.t.Fatalf("tcpproxy: listen again on %s: %v", p.addr, err)
	}
	p.serve(ln)
}

func (p *TCPProxy) serve(ln net.Listener) {
	p.mu.Lock()
	p.ln = ln
	p.mu.Unlock()
	p.wg.Add(1)
	go func() {
		defer p.wg.Done()
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			p.wg.Add(1)
			go func() {
				defer p.wg.Done()
				p.forward(c)
			}()
		}
	}()
}

// link is one proxied connection: the client's, and the target's once
// dialled. gone closes when either side ends or the proxy cuts it.
type link struct {
	client net.Conn
	gone   chan struct{}

	mu     sync.Mutex
	server net.Conn
	ended  bool
}

func (l *link) end() {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.ended {
		return
	}
	l.ended = true
	close(l.gone)
	l.client.Close()
	if l.server != nil {
		l.server.Close()
	}
}

// join records the target's connection; false (and it is closed) when
// the link ended while it was dialled.
func (l *link) join(server net.Conn) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.ended {
		server.Close()
		return false
	}
	l.server = server
	return true
}

// forward joins client to a new connection to the target, once bytes may
// flow.
func (p *TCPProxy) forward(client net.Conn) {
	l := &link{client: client, gone: make(chan struct{})}
	if !p.track(l) {
		return
	}
	defer p.untrack(l)
	if !p.wait(l) {
		return
	}
	server, err := net.DialTimeout("tcp", p.target, 5*time.Second)
	if err != nil {
		return
	}
	if !l.join(server) {
		return
	}
	done := make(chan struct{}, 2)
	go func() { p.copy(l, server, client); done <- struct{}{} }()
	go func() { p.copy(l, client, server); done <- struct{}{} }()
	<-done
	l.end()
	<-done
}

// copy moves bytes from src to dst, each chunk only while not paused.
func (p *TCPProxy) copy(l *link, dst, src net.Conn) {
	buf := make([]byte, 32<<10)
	for {
		n, err := src.Read(buf)
		if n > 0 {
			if !p.wait(l) {
				return
			}
			if _, werr := dst.Write(buf[:n]); werr != nil {
				return
			}
		}
		if err != nil {
			return
		}
	}
}

// wait blocks while the proxy is paused; false when the link ended
// meanwhile.
func (p *TCPProxy) wait(l *link) bool {
	p.mu.Lock()
	open := p.open
	p.mu.Unlock()
	select {
	case <-open:
		return true
	case <-l.gone:
		return false
	}
}

func (p *TCPProxy) track(l *link) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed || p.ln == nil {
		l.client.Close()
		return false
	}
	p.links[l] = struct{}{}
	return true
}

func (p *TCPProxy) untrack(l *link) {
	p.mu.Lock()
	delete(p.links, l)
	p.mu.Unlock()
	l.end()
}

func (p *TCPProxy) close() {
	p.mu.Lock()
	p.closed = true
	p.mu.Unlock()
	p.Cut()
	p.wg.Wait()
}
