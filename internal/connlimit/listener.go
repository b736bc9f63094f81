package connlimit

import (
	"log/slog"
	"net"
	"net/netip"
	"sync"
	"time"
)

// Config bounds a Listener. Zero values mean unlimited.
type Config struct {
	Max   int // connections open at once
	PerIP int // connections open at once from one client address
	// Refuse, when set, answers a connection past a bound before it is
	// closed. It runs in its own goroutine, at most refusing at once; it
	// must set its own deadlines (the conn has one of RefuseTimeout).
	Refuse func(c net.Conn, r Refusal)
	// Timeouts, when set, make the Listener's conns govern their own read
	// deadlines (see the package comment).
	Timeouts *Timeouts
	// Name and Logger: refusals are logged at most once a minute per
	// listener, with their count, so that a flood does not flood the log.
	Name   string
	Logger *slog.Logger
}

// Timeouts are a line protocol's silence bounds.
type Timeouts struct {
	First time.Duration // from accept until Promote, all reads together
	Idle  time.Duration // between reads after Promote
}

// Refusal says which bound a refused connection met.
type Refusal struct {
	Addr  netip.Addr // the client's address
	PerIP bool       // the per-address bound (else the total)
	Limit int
}

// RefuseTimeout bounds the answer to a refused connection (a TLS
// handshake and a line).
const RefuseTimeout = 5 * time.Second

const (
	refusing = 64 // refusals answered at once; past it, closed without a word
	logEvery = time.Minute
)

// Listener is a bounded net.Listener.
type Listener struct {
	net.Listener
	cfg     Config
	refuseQ chan struct{}

	mu      sync.Mutex
	open    int
	perIP   map[netip.Addr]int
	refused int       // since the last log line
	logged  time.Time // of the last log line
}

// New bounds ln.
func New(ln net.Listener, cfg Config) *Listener {
	return &Listener{Listener: ln, cfg: cfg, refuseQ: make(chan struct{}, refusing), perIP: map[netip.Addr]int{}}
}

// Accept returns the next connection within the bounds; connections past
// them are refused in the background and never returned.
func (l *Listener) Accept() (net.Conn, error) {
	for {
		c, err := l.Listener.Accept()
		if err != nil {
			return nil, err
		}
		addr := clientAddr(c)
		if r, ok := l.admit(addr); !ok {
			l.refuse(c, r)
			continue
		}
		return l.wrap(c, addr), nil
	}
}

// Open is the number of connections open now.
func (l *Listener) Open() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.open
}

func (l *Listener) admit(addr netip.Addr) (Refusal, bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.cfg.Max > 0 && l.open >= l.cfg.Max {
		return Refusal{Addr: addr, Limit: l.cfg.Max}, false
	}
	if l.cfg.PerIP > 0 && l.perIP[ClientKey(addr)] >= l.cfg.PerIP {
		return Refusal{Addr: addr, PerIP: true, Limit: l.cfg.PerIP}, false
	}
	l.open++
	l.perIP[ClientKey(addr)]++
	return Refusal{}, true
}

func (l *Listener) release(addr netip.Addr) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.open--
	key := ClientKey(addr)
	if l.perIP[key]--; l.perIP[key] <= 0 {
		delete(l.perIP, key)
	}
}

func (l *Listener) refuse(c net.Conn, r Refusal) {
	l.note(r)
	if l.cfg.Refuse == nil {
		c.Close()
		return
	}
	select {
	case l.refuseQ <- struct{}{}:
	default:
		c.Close()
		return
	}
	go func() {
		defer func() { <-l.refuseQ }()
		defer c.Close()
		c.SetDeadline(time.Now().Add(RefuseTimeout)) //nolint:errcheck // a failed write is closed anyway
		l.cfg.Refuse(c, r)
	}()
}

// note logs refusals, at most once a minute.
func (l *Listener) note(r Refusal) {
	if l.cfg.Logger == nil {
		return
	}
	l.mu.Lock()
	l.refused++
	n, now := l.refused, time.Now()
	if now.Sub(l.logged) < logEvery {
		l.mu.Unlock()
		return
	}
	l.refused, l.logged = 0, now
	l.mu.Unlock()
	bound := "total"
	if r.PerIP {
		bound = "per client address"
	}
	l.cfg.Logger.Warn("connections refused past a bound", "listener", l.cfg.Name, "refused", n,
		"last_bound", bound, "limit", r.Limit, "last_client", r.Addr.String())
}

// ClientKey is what a per-client bound counts by: an IPv4 address, or an
// IPv6 address's /64, since one subscriber (one host, even) is given a
// whole /64 and could otherwise open PerIP connections from each of its
// 2^64 addresses.
func ClientKey(addr netip.Addr) netip.Addr {
	if addr.Is6() && !addr.Is4In6() {
		return netip.PrefixFrom(addr, 64).Masked().Addr()
	}
	return addr
}

func clientAddr(c net.Conn) netip.Addr {
	if a, ok := c.RemoteAddr().(*net.TCPAddr); ok {
		return a.AddrPort().Addr().Unmap()
	}
	ap, _ := netip.ParseAddrPort(c.RemoteAddr().String())
	return ap.Addr().Unmap()
}
