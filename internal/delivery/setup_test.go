package delivery_test

import (
	"bufio"
	"context"
	"crypto/tls"
	"io"
	"net"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/postline/postline/internal/delivery"
	"github.com/postline/postline/internal/dnsclient"
	"github.com/postline/postline/internal/dnstest"
	"github.com/postline/postline/internal/smtptest"
)

const testMsg = "From: a@sender.test\r\nTo: b@example.test\r\nSubject: hi\r\n\r\nHello.\r\n"

// fixture is what every test gets: a DNS server, a resolver aimed at it, a
// sink, and a transport whose MX port is the sink's.
type fixture struct {
	dns  *dnstest.Server
	sink *smtptest.Sink
	tr   *delivery.Transport
	base int // sink sessions not made by the transport
}

// setup starts the servers and the transport; mod adjusts the transport's
// config before New.
func setup(t testing.TB, sc smtptest.Config, mod ...func(*delivery.Config)) *fixture {
	t.Helper()
	dns := dnstest.New(t)
	res, err := dnsclient.New(dnsclient.Config{Server: dns.Addr(), Timeout: time.Second, CacheSize: -1})
	if err != nil {
		t.Fatalf("dnsclient.New: %v", err)
	}
	sink := smtptest.New(t, sc)
	base := warmUp(t, sink)
	cfg := delivery.Config{
		Resolver:       res,
		MXPort:         sink.Port(),
		HeloName:       "postline.test",
		DialTimeout:    2 * time.Second,
		CommandTimeout: 10 * time.Second,
		AllowPrivate:   true, // the sink is on loopback
	}
	for _, m := range mod {
		m(&cfg)
	}
	tr, err := delivery.New(cfg)
	if err != nil {
		t.Fatalf("delivery.New: %v", err)
	}
	t.Cleanup(func() { tr.Close() })
	return &fixture{dns: dns, sink: sink, tr: tr, base: base}
}

// warmUp connects to the sink once and reads its greeting, and returns the
// sink's session count after that. Its purpose is a workaround: Sink.Close
// hangs if it runs before go-smtp's Serve has registered the listener
// (Server.Close only closes listeners registered so far), which a test that
// never connects can hit. A greeting proves Serve is accepting.
func warmUp(t testing.TB, sink *smtptest.Sink) int {
	t.Helper()
	c, err := net.Dial("tcp", sink.Addr())
	if err != nil {
		t.Fatalf("warm-up dial: %v", err)
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(10 * time.Second))
	r := bufio.NewReader(c)
	if _, err := r.ReadString('\n'); err != nil {
		t.Fatalf("warm-up greeting: %v", err)
	}
	// QUIT and its reply: the sink no longer counts the connection as
	// open (Sink.MaxOpen) once it replies.
	if _, err := io.WriteString(c, "QUIT\r\n"); err != nil {
		t.Fatalf("warm-up QUIT: %v", err)
	}
	if _, err := r.ReadString('\n'); err != nil {
		t.Fatalf("warm-up QUIT reply: %v", err)
	}
	return sink.Sessions()
}

// sessions is the number of connections the sink accepted from the
// transport.
func (f *fixture) sessions() int { return f.sink.Sessions() - f.base }

// relay is a plain-text route to the fixture's sink.
func (f *fixture) relay() delivery.Route {
	return delivery.Route{Mode: delivery.ModeSMTP, Host: "127.0.0.1", Port: f.sink.Port(), TLS: delivery.TLSNone}
}

// send sends testMsg to rcpt over r with a bounded context.
func (f *fixture) send(t testing.TB, r delivery.Route, rcpt string) (delivery.Result, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	return f.tr.Send(ctx, r, delivery.Envelope{From: "a@sender.test", To: rcpt}, []byte(testMsg))
}

// asError returns err as *delivery.Error, failing the test if it is not.
func asError(t testing.TB, err error) *delivery.Error {
	t.Helper()
	e, ok := err.(*delivery.Error)
	if !ok {
		t.Fatalf("error %v (%T) is not a *delivery.Error", err, err)
	}
	return e
}

// proxy is a TCP front for a sink on 127.0.0.1: it forwards each accepted
// connection to backend (optionally terminating TLS first), or, with no
// backend, accepts and never answers (a black hole). It counts connections
// and can drop them all, as a server timing out idle clients does.
type proxy struct {
	ln       net.Listener
	backend  string
	accepted atomic.Int64
	acceptCh chan struct{} // one value per accepted connection

	mu    sync.Mutex
	conns []net.Conn
}

func newProxy(t testing.TB, backend string, cfg *tls.Config) *proxy {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	if cfg != nil {
		ln = tls.NewListener(ln, cfg)
	}
	p := &proxy{ln: ln, backend: backend, acceptCh: make(chan struct{}, 1000)}
	go p.serve()
	t.Cleanup(func() { ln.Close(); p.DropAll() })
	return p
}

func (p *proxy) serve() {
	for {
		c, err := p.ln.Accept()
		if err != nil {
			return
		}
		p.accepted.Add(1)
		p.track(c)
		p.acceptCh <- struct{}{}
		if p.backend == "" {
			continue
		}
		b, err := net.Dial("tcp", p.backend)
		if err != nil {
			c.Close()
			continue
		}
		p.track(b)
		go func() { io.Copy(b, c); b.Close() }()
		go func() { io.Copy(c, b); c.Close() }()
	}
}

func (p *proxy) track(c net.Conn) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.conns = append(p.conns, c)
}

// Port is the port the proxy listens on.
func (p *proxy) Port() int { return p.ln.Addr().(*net.TCPAddr).Port }

// DropAll closes every connection made so far.
func (p *proxy) DropAll() {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, c := range p.conns {
		c.Close()
	}
	p.conns = nil
}

// waitAccepted waits for n more accepted connections.
func (p *proxy) waitAccepted(t testing.TB, n int) {
	t.Helper()
	for range n {
		select {
		case <-p.acceptCh:
		case <-time.After(10 * time.Second):
			t.Fatal("proxy: no connection accepted")
		}
	}
}
