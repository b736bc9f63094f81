package simnet

import (
	"crypto/tls"
	"fmt"
	"maps"
	"net/netip"
	"slices"
	"time"

	"github.com/postline/postline/internal/smtptest"
)

// Message is one message a provider accepted.
type Message struct {
	Provider string
	Client   netip.Addr // the source address it came from
	Conn     uint64     // the connection's number at the provider, from 1
	From     string
	To       []string // accepted recipients, in RCPT order
	Data     []byte   // as sent, dot-unstuffed; nil with Config.DiscardData
	// MailAt is when its MAIL FROM arrived: the time it counts at in the
	// message rate. ReceivedAt is the end of its DATA.
	MailAt, ReceivedAt time.Time
	Helo               string
	TLS                *TLSState // nil when sent in clear
}

// TLSState is the TLS of the connection a message came over.
type TLSState struct {
	Version    uint16 // tls.VersionTLS13, ...
	ServerName string // the SNI the client sent ("" if none)
}

// VersionName is "TLS 1.3" and the like.
func (s *TLSState) VersionName() string { return tls.VersionName(s.Version) }

// Kind is the limit a violation exceeded.
type Kind int

const (
	ConnectionLimit       Kind = iota + 1 // ProviderConfig.MaxConnections
	MessageRate                           // ProviderConfig.MessageRate
	MessagesPerConnection                 // ProviderConfig.MaxMessagesPerConnection
)

func (k Kind) String() string {
	switch k {
	case ConnectionLimit:
		return "connection limit"
	case MessageRate:
		return "message rate"
	case MessagesPerConnection:
		return "messages per connection"
	}
	return fmt.Sprintf("Kind(%d)", int(k))
}

// Violation is one time a client went past one of a provider's limits: the
// connection or MAIL FROM that was refused for it.
type Violation struct {
	Time     time.Time
	Provider string
	Client   netip.Addr
	Kind     Kind
	// Count is what the client attempted: its Count-th connection at once,
	// or its Count-th message in the rate period or on the connection.
	Count, Limit int
	Per          time.Duration // the rate period, for MessageRate
}

func (v Violation) String() string {
	at := v.Time.Format("15:04:05.000")
	switch v.Kind {
	case ConnectionLimit:
		return fmt.Sprintf("%s %s: %v opened connection %d at once (limit %d)", at, v.Provider, v.Client, v.Count, v.Limit)
	case MessageRate:
		return fmt.Sprintf("%s %s: %v sent message %d within %v (limit %d)", at, v.Provider, v.Client, v.Count, v.Per, v.Limit)
	}
	return fmt.Sprintf("%s %s: %v sent message %d on one connection (limit %d)", at, v.Provider, v.Client, v.Count, v.Limit)
}

// ViolationCounts counts violations by kind.
type ViolationCounts struct {
	Connections, MessageRate, MessagesPerConnection int
}

// Total is the number of violations of every kind.
func (c ViolationCounts) Total() int { return c.Connections + c.MessageRate + c.MessagesPerConnection }

// Cause is why a provider refused something.
type Cause string

const (
	CauseConnections   Cause = "connections"    // MaxConnections
	CauseRate          Cause = "rate"           // MessageRate
	CausePerConnection Cause = "per-connection" // MaxMessagesPerConnection
	CauseGreylist      Cause = "greylist"       // Greylist
	CauseInjected      Cause = "injected"       // Inject
)

// Refusal is one 4xx or 5xx reply a provider chose to send (go-smtp's own
// answers to malformed commands are not recorded).
type Refusal struct {
	Time     time.Time
	Provider string
	Client   netip.Addr
	Stage    string // "connect" (the greeting), "mail" or "rcpt"
	Reply    smtptest.Reply
	Cause    Cause
}

// ClientStats is what a provider saw of one client address.
type ClientStats struct {
	// Connections is how many it opened, refused ones included.
	Connections int
	// MaxConcurrent is the most it held open at once, a refused one
	// included (so it exceeds MaxConnections exactly when a connection
	// violation happened), measured with ConnectionGrace.
	MaxConcurrent int
	// Messages is how many messages were accepted from it.
	Messages int
	// MaxRate is the most accepted messages whose MAIL FROM fell within
	// any one window of the provider's rate period less RateSlack (a
	// minute less a second by default), sliding, whatever RateWindow is.
	MaxRate int
	// MaxPerConnection is the most messages accepted on one connection.
	MaxPerConnection int
	Violations       ViolationCounts
}

// Stats is what the provider saw of client (zero if nothing).
func (p *Provider) Stats(client netip.Addr) ClientStats {
	p.mu.Lock()
	defer p.mu.Unlock()
	c := p.clients[client]
	if c == nil {
		return ClientStats{}
	}
	return ClientStats{
		Connections:      c.conns,
		MaxConcurrent:    c.peak,
		Messages:         len(c.accepted),
		MaxRate:          maxInWindow(c.accepted, p.cfg.MessageRate.Per-p.cfg.RateSlack),
		MaxPerConnection: c.maxPerConn,
		Violations:       c.violations,
	}
}

// Clients is the stats of every client address the provider has seen.
func (p *Provider) Clients() map[netip.Addr]ClientStats {
	p.mu.Lock()
	addrs := slices.Collect(maps.Keys(p.clients))
	p.mu.Unlock()
	out := make(map[netip.Addr]ClientStats, len(addrs))
	for _, a := range addrs {
		out[a] = p.Stats(a)
	}
	return out
}

// maxInWindow is the most times within any half-open window (t-w, t].
func maxInWindow(times []time.Time, w time.Duration) int {
	ts := slices.Clone(times)
	slices.SortFunc(ts, time.Time.Compare)
	best, i := 0, 0
	for j, t := range ts {
		for !ts[i].After(t.Add(-w)) {
			i++
		}
		best = max(best, j-i+1)
	}
	return best
}

// Messages is a copy of the messages the provider accepted, in order.
func (p *Provider) Messages() []Message {
	p.mu.Lock()
	defer p.mu.Unlock()
	out := slices.Clone(p.msgs)
	for i := range out {
		out[i].To = slices.Clone(out[i].To)
	}
	return out
}

// Refusals is every refusal the provider sent, in order.
func (p *Provider) Refusals() []Refusal {
	p.mu.Lock()
	defer p.mu.Unlock()
	return slices.Clone(p.refusals)
}

// Violations is every violation of the provider's limits, in order.
func (p *Provider) Violations() []Violation {
	p.mu.Lock()
	defer p.mu.Unlock()
	return slices.Clone(p.violations)
}

// PolicyFetches is how many times each domain's MTA-STS policy was
// fetched.
func (p *Provider) PolicyFetches() map[string]int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return maps.Clone(p.fetches)
}
