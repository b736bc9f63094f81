package connlimit

import (
	"container/list"
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
	// Evict, at the total bound, closes an evictable connection to admit
	// a new one instead of refusing it (evict.go); a conn is evictable
	// from accept until Promote when EvictUntilPromote, from accept to its
	// end when EvictAlways, and whenever SetEvictable says so.
	Evict             bool
	EvictUntilPromote bool
	EvictAlways       bool
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

	mu    sync.Mutex
	open  int
	perIP map[netip.Addr]int
	// evictable conns by client address, each list longest first
	evictable map[netip.Addr]*list.List
	refused   int       // since the last log line
	evicted   int       // since the last log line
	logged    time.Time // of the last log line
}

// New bounds ln.
func New(ln net.Listener, cfg Config) *Listener {
	return &Listener{Listener: ln, cfg: cfg, refuseQ: make(chan struct{}, refusing), perIP: map[netip.Addr]int{}, evictable: map[netip.Addr]*list.List{}}
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
		lc, r, victim := l.admit(c, addr)
		if victim != nil {
			victim.Conn.Close() // its place is the new conn's; Close gives nothing back twice
			l.note(Refusal{}, true)
		}
		if lc == nil {
			l.refuse(c, r)
			continue
		}
		return lc, nil
	}
}

// Open is the number of connections open now.
func (l *Listener) Open() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.open
}

// admit counts c in, or says which bound it meets; at the total bound it
// may admit c in the place of an evictable conn (victim), which the caller
// closes.
func (l *Listener) admit(c net.Conn, addr netip.Addr) (lc *Conn, r Refusal, victim *Conn) {
	l.mu.Lock()
	defer l.mu.Unlock()
	key := ClientKey(addr)
	if l.cfg.PerIP > 0 && l.perIP[key] >= l.cfg.PerIP {
		return nil, Refusal{Addr: addr, PerIP: true, Limit: l.cfg.PerIP}, nil
	}
	if l.cfg.Max > 0 && l.open >= l.cfg.Max {
		if victim = l.victim(); victim == nil {
			return nil, Refusal{Addr: addr, Limit: l.cfg.Max}, nil
		}
		l.drop(victim)
	}
	l.open++
	l.perIP[key]++
	lc = l.wrap(c, addr)
	if l.cfg.Evict && (l.cfg.EvictUntilPromote || l.cfg.EvictAlways) {
		l.markEvictable(lc)
	}
	return lc, Refusal{}, victim
}

// release gives c's place back, once.
func (l *Listener) release(c *Conn) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if !c.closed {
		l.drop(c)
	}
}

// drop takes c out of the counts (under l.mu).
func (l *Listener) drop(c *Conn) {
	l.forget(c)
	l.open--
	key := ClientKey(c.addr)
	if l.perIP[key]--; l.perIP[key] <= 0 {
		delete(l.perIP, key)
	}
}

func (l *Listener) refuse(c net.Conn, r Refusal) {
	l.note(r, false)
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

// note logs refusals and evictions, at most once a minute.
func (l *Listener) note(r Refusal, evicted bool) {
	if l.cfg.Logger == nil {
		return
	}
	l.mu.Lock()
	if !evicted {
		l.refused++
	}
	refused, evictions, now := l.refused, l.evicted, time.Now()
	if now.Sub(l.logged) < logEvery {
		l.mu.Unlock()
		return
	}
	l.refused, l.evicted, l.logged = 0, 0, now
	l.mu.Unlock()
	if evicted {
		l.cfg.Logger.Warn("idle connections closed to admit others at the total bound", "listener", l.cfg.Name,
			"evicted", evictions, "refused", refused, "limit", l.cfg.Max)
		return
	}
	bound := "total"
	if r.PerIP {
		bound = "per client address"
	}
	l.cfg.Logger.Warn("connections refused past a bound", "listener", l.cfg.Name, "refused", refused,
		"evicted", evictions, "last_bound", bound, "limit", r.Limit, "last_client", r.Addr.String())
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
