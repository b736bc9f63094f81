package dnsclient

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"net"
	"strings"
	"time"

	"github.com/miekg/dns"
	"golang.org/x/sync/singleflight"
)

// ednsSize is the UDP payload size advertised in EDNS0: the DNS Flag Day
// 2020 value, which avoids IP fragmentation; larger answers come over TCP.
const ednsSize = 1232

// Config configures a Resolver. The zero value is usable: it queries the
// first nameserver of /etc/resolv.conf with the defaults below.
type Config struct {
	// Server is the recursive resolver to query, "host:port" (":53" is
	// assumed without a port). Empty means the first nameserver listed in
	// /etc/resolv.conf, read once by New.
	Server string
	// Timeout bounds each attempt (UDP plus any TCP retry). Default 2s.
	Timeout time.Duration
	// Attempts is how many times a query is sent when no response arrives
	// (timeouts, network errors). A response with an error rcode is not
	// retried. Default 2.
	Attempts int
	// CacheSize is the number of (name, type) answers kept. 0 means the
	// default of 10000; a negative value disables the cache.
	CacheSize int
	// NowFunc returns the time used for cache expiry. Default time.Now.
	NowFunc func() time.Time
	// Observe, when set, is told the duration and outcome kind ("ok",
	// "not_found", "no_data", "temporary", ...) of every query sent to the
	// server (cached answers are not queries), for metrics.
	Observe func(qtype, outcome string, d time.Duration)
}

// Resolver sends queries to one recursive resolver and caches the answers.
// It is safe for concurrent use; share one per process.
type Resolver struct {
	server   string
	timeout  time.Duration
	attempts int
	now      func() time.Time
	observe  func(qtype, outcome string, d time.Duration)
	udp, tcp *dns.Client
	cache    *cache
	group    singleflight.Group
}

// New checks cfg, fills in its defaults and returns a Resolver.
func New(cfg Config) (*Resolver, error) {
	if cfg.Timeout < 0 {
		return nil, fmt.Errorf("dnsclient: Timeout is negative (%v)", cfg.Timeout)
	}
	if cfg.Attempts < 0 {
		return nil, fmt.Errorf("dnsclient: Attempts is negative (%d)", cfg.Attempts)
	}
	server, err := serverAddr(cfg.Server)
	if err != nil {
		return nil, err
	}
	timeout := cmp.Or(cfg.Timeout, 2*time.Second)
	r := &Resolver{
		server:   server,
		timeout:  timeout,
		attempts: cmp.Or(cfg.Attempts, 2),
		now:      cfg.NowFunc,
		observe:  cfg.Observe,
		udp:      &dns.Client{Net: "udp", Timeout: timeout, UDPSize: ednsSize},
		tcp:      &dns.Client{Net: "tcp", Timeout: timeout},
		cache:    newCache(cmp.Or(cfg.CacheSize, 10000)),
	}
	if r.now == nil {
		r.now = time.Now
	}
	return r, nil
}

// serverAddr validates a configured server, or reads the system's.
func serverAddr(s string) (string, error) {
	if s == "" {
		conf, err := dns.ClientConfigFromFile("/etc/resolv.conf")
		if err != nil {
			return "", fmt.Errorf("dnsclient: no Server configured and %w", err)
		}
		if len(conf.Servers) == 0 {
			return "", errors.New("dnsclient: no Server configured and no nameserver in /etc/resolv.conf")
		}
		return net.JoinHostPort(conf.Servers[0], conf.Port), nil
	}
	if _, _, err := net.SplitHostPort(s); err != nil {
		s = net.JoinHostPort(s, "53")
	}
	host, _, err := net.SplitHostPort(s)
	if err != nil || host == "" {
		return "", fmt.Errorf("dnsclient: Server %q is not host:port", s)
	}
	return s, nil
}

// query returns the answer records of type qtype for name, from the cache
// or from one deduplicated exchange. Every error is an *Error.
//
// The exchange runs detached from ctx, because other callers may be waiting
// on it; it is bounded by Attempts × Timeout. A caller whose ctx ends stops
// waiting at once with a Temporary error wrapping ctx.Err().
func (r *Resolver) query(ctx context.Context, name string, qtype uint16) ([]dns.RR, error) {
	res, err := r.lookup(ctx, name, qtype)
	if err != nil {
		return nil, err
	}
	return res.unpack(name, dns.TypeToString[qtype])
}

// lookup is query returning the whole result (with its AD bit); the error
// is set only when nothing was asked or the caller's ctx ended.
func (r *Resolver) lookup(ctx context.Context, name string, qtype uint16) (result, error) {
	qt := dns.TypeToString[qtype]
	norm, err := normalize(name)
	if err != nil {
		return result{}, &Error{Name: name, Qtype: qt, Kind: Invalid, Rcode: -1, Err: err}
	}
	if err := ctx.Err(); err != nil {
		return result{}, &Error{Name: name, Qtype: qt, Kind: Temporary, Rcode: -1, Err: err}
	}
	key := cacheKey{name: norm, qtype: qtype}
	if res, ok := r.cache.get(key, r.now()); ok {
		return res, nil
	}
	ch := r.group.DoChan(norm+"/"+qt, func() (any, error) {
		started := time.Now()
		res := r.exchange(norm, qtype)
		if r.observe != nil {
			outcome := "ok"
			if res.kind != 0 {
				outcome = strings.ReplaceAll(res.kind.String(), " ", "_")
			}
			r.observe(qt, outcome, time.Since(started))
		}
		r.cache.put(key, res, r.now())
		return res, nil
	})
	select {
	case <-ctx.Done():
		return result{}, &Error{Name: name, Qtype: qt, Kind: Temporary, Rcode: -1, Err: ctx.Err()}
	case c := <-ch:
		return c.Val.(result), nil
	}
}

// unpack turns a result into what the lookups return.
func (res result) unpack(name, qtype string) ([]dns.RR, error) {
	if res.kind == 0 {
		return res.rrs, nil
	}
	return nil, &Error{Name: name, Qtype: qtype, Kind: res.kind, Rcode: res.rcode, Err: res.err}
}

// exchange sends the query up to r.attempts times until a response arrives,
// and classifies it.
func (r *Resolver) exchange(name string, qtype uint16) result {
	m := new(dns.Msg)
	m.SetQuestion(name+".", qtype)
	m.SetEdns0(ednsSize, false)
	// AD in a query asks a validating resolver to say whether it validated
	// the answer (RFC 6840 §5.7), without the DO bit's signatures. DANE
	// needs it for TLSA records; it costs nothing for the others.
	m.AuthenticatedData = true
	var lastErr error
	for range r.attempts {
		m.Id = dns.Id()
		resp, err := r.exchangeOnce(m)
		if err == nil {
			return classify(resp, qtype)
		}
		lastErr = err
	}
	return result{kind: Temporary, rcode: -1, err: lastErr}
}

// exchangeOnce sends m over UDP, and again over TCP if the answer was
// truncated, within one Timeout.
func (r *Resolver) exchangeOnce(m *dns.Msg) (*dns.Msg, error) {
	ctx, cancel := context.WithTimeout(context.Background(), r.timeout)
	defer cancel()
	resp, _, err := r.udp.ExchangeContext(ctx, m, r.server)
	if err == nil && resp.Truncated {
		resp, _, err = r.tcp.ExchangeContext(ctx, m, r.server)
	}
	return resp, err
}

// classify maps a response to a result: records of qtype (with the smallest
// TTL in the answer, CNAMEs included), NoData, NotFound, or Temporary for
// any other rcode.
func classify(resp *dns.Msg, qtype uint16) result {
	switch resp.Rcode {
	case dns.RcodeSuccess:
		var rrs []dns.RR
		ttl := uint32(1<<32 - 1)
		for _, rr := range resp.Answer {
			ttl = min(ttl, rr.Header().Ttl)
			if rr.Header().Rrtype == qtype {
				rrs = append(rrs, rr)
			}
		}
		if len(rrs) > 0 {
			return result{rrs: rrs, ttl: clampTTL(ttl, maxTTL), authenticated: resp.AuthenticatedData}
		}
		return result{kind: NoData, rcode: dns.RcodeSuccess, ttl: negativeTTL(resp), authenticated: resp.AuthenticatedData}
	case dns.RcodeNameError:
		return result{kind: NotFound, rcode: dns.RcodeNameError, ttl: negativeTTL(resp), authenticated: resp.AuthenticatedData}
	default:
		return result{kind: Temporary, rcode: resp.Rcode}
	}
}

// negativeTTL is how long a negative answer may be cached (RFC 2308 §5):
// the smaller of the authority SOA's TTL and its minimum field. Without an
// SOA the answer is not cached.
func negativeTTL(resp *dns.Msg) time.Duration {
	for _, rr := range resp.Ns {
		if soa, ok := rr.(*dns.SOA); ok {
			return clampTTL(min(soa.Hdr.Ttl, soa.Minttl), maxNegativeTTL)
		}
	}
	return 0
}
