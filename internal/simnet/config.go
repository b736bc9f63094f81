package simnet

import (
	"cmp"
	"fmt"
	"net/netip"
	"regexp"
	"time"

	"github.com/emersion/go-smtp"
	"github.com/postline/postline/internal/dnstest"
	"github.com/postline/postline/internal/smtptest"
)

// Config describes a simulated internet. The zero value is not usable:
// Providers must name at least one provider.
type Config struct {
	// Providers to start, in order: the first listens on BaseAddr, the
	// next on the following address, and so on.
	Providers []ProviderConfig
	// BaseAddr is the first provider's address. Default 127.0.0.2. Every
	// provider's address must stay inside 127.0.0.0/8.
	BaseAddr netip.Addr
	// MXPort is the SMTP port of every provider (the --mx-port of the
	// server under test). 0 picks a port free on every provider address.
	MXPort int
	// MTASTSPort is the HTTPS port of the MTA-STS policy servers (the
	// --mta-sts-port of the server under test). 0 picks a port free on
	// every address of a provider with an MTA-STS policy.
	MTASTSPort int
	// ConnectionGrace is how long a connection that would exceed its
	// client's connection limit (or raise its peak) waits for one of that
	// client's connections to end before it is counted. A client may open
	// a connection as soon as the reply to QUIT arrives; the provider sees
	// the old one end a moment later. Default 200ms.
	ConnectionGrace time.Duration
	// DiscardData keeps no message bodies (Message.Data is nil), for runs
	// of a hundred thousand messages.
	DiscardData bool
	// Authenticate marks a DNS name as DNSSEC-validated so that answers
	// about it carry the AD bit. simnet calls it, for providers with DANE,
	// on each of their domains (the MX answer), MX host names and TLSA
	// names. nil means dnstest's SetAuthenticated; a test of an unsigned
	// zone passes a function that does nothing.
	Authenticate func(d *dnstest.Server, name string)
}

// ProviderConfig describes one mailbox provider: its names, its domains and
// what it tolerates from one client (source) address. Zero limits are
// unlimited.
type ProviderConfig struct {
	// Name is a DNS label naming the provider ("gmail", "outlook"). It
	// makes the default MX host and domain names (see the package doc).
	// Required and unique.
	Name string
	// Domains is how many domains d001.NAME.example, d002... the provider
	// hosts. Default 100; negative means none (only DomainNames).
	Domains int
	// DomainNames are further domains it hosts, with any names.
	DomainNames []string
	// MXHosts are the shared MX host names, in preference order (10, 20,
	// ...). Default mx1.NAME.simnet.test and mx2.NAME.simnet.test.
	MXHosts []string
	// PerDomainMX gives each domain its own MX host instead, as Microsoft
	// does: LABELS.mx.NAME.simnet.test, where LABELS is the domain with dots
	// made dashes. Each domain is then a site of its own.
	PerDomainMX bool

	// MaxConnections is how many connections one client address may hold
	// open at once. The connection past it is answered ConnectionReply at
	// the greeting and closed.
	MaxConnections int
	// ConnectionReply defaults to 421 4.7.0 too many connections.
	ConnectionReply smtptest.Reply

	// MessageRate is how many messages one client address may send per
	// period (see RateWindow). The MAIL FROM past it is answered RateReply.
	MessageRate Rate
	// RateWindow says how the period is counted. Default Sliding.
	RateWindow Window
	// RateSlack shortens the sliding window, for the moments between the
	// client's decision to send and its MAIL FROM arriving. Default the
	// smaller of a twentieth of the period and one second.
	RateSlack time.Duration
	// RateReply defaults to 421 4.7.28 NAME: rate limited, try again later.
	RateReply smtptest.Reply

	// MaxMessagesPerConnection is how many messages a connection may carry;
	// the next MAIL FROM is answered PerConnectionReply.
	MaxMessagesPerConnection int
	// PerConnectionReply defaults to 421 4.7.0 too many messages on this
	// connection.
	PerConnectionReply smtptest.Reply

	// Greylist defers the first RCPT TO of each (client address, sender,
	// recipient) with GreylistReply; the same triplet passes once
	// GreylistDelay has gone by since that first attempt.
	Greylist      bool
	GreylistDelay time.Duration
	// GreylistReply defaults to 450 4.2.0 greylisted, try again later.
	GreylistReply smtptest.Reply

	// TLS says whether STARTTLS is offered and with which certificate.
	// Default TLSOff.
	TLS TLSMode
	// MTASTS, when set, publishes an MTA-STS policy for every domain of the
	// provider and serves it over HTTPS.
	MTASTS *MTASTSPolicy
	// DANE, when set, publishes TLSA records for the MX hosts (needs TLS).
	DANE *DANE
}

// Rate is Count messages per Per.
type Rate struct {
	Count int
	Per   time.Duration
}

// String writes the rate as KumoMTA does: "60/1m0s".
func (r Rate) String() string { return fmt.Sprintf("%d/%v", r.Count, r.Per) }

// PerMinute is n messages a minute.
func PerMinute(n int) Rate { return Rate{Count: n, Per: time.Minute} }

// Window is how a provider counts messages against MessageRate.
type Window int

const (
	// Sliding counts the messages of the last period (less RateSlack) at
	// every MAIL FROM: no period anywhere holds more than the rate.
	Sliding Window = iota
	// Fixed counts per period aligned on the clock (whole minutes for a
	// per-minute rate), as a counter reset every period does: a client may
	// send the rate at the end of one period and again at the start of the
	// next.
	Fixed
)

// TLSMode is what a provider does about STARTTLS.
type TLSMode int

const (
	// TLSOff does not offer STARTTLS.
	TLSOff TLSMode = iota
	// TLSValid offers STARTTLS with a certificate from the test CA for every
	// MX host name of the provider.
	TLSValid
	// TLSWrongName offers a certificate from the test CA for
	// wrong-name.simnet.test only: it verifies for no MX host.
	TLSWrongName
	// TLSUntrusted offers a self-signed certificate for the MX host names:
	// right names, unknown issuer.
	TLSUntrusted
	// TLSExpired offers a certificate from the test CA for the MX host
	// names that expired an hour ago.
	TLSExpired
)

// MTASTSPolicy is the MTA-STS policy (RFC 8461) a provider publishes for
// each of its domains.
type MTASTSPolicy struct {
	// Mode is "enforce", "testing" or "none". Default "enforce".
	Mode string
	// MX are the policy's mx patterns. Default the domain's own MX hosts.
	MX []string
	// MaxAge defaults to one day.
	MaxAge time.Duration
	// ID is the id of the _mta-sts TXT record. Default "simnet1".
	ID string
}

// DANE describes the TLSA records (RFC 6698, 7672) published at
// _25._tcp.MXHOST for each of a provider's MX hosts, as a sender
// delivering on port 25 looks them up, and the same at
// _MXPORT._tcp.MXHOST, for a sender told to deliver on MXPort (whose
// TLSA records are those of the port it dials, RFC 6698 §3).
type DANE struct {
	// Usage is 3 (DANE-EE: the provider's certificate) or 2 (DANE-TA: the
	// test CA). Selector 1 (SPKI) and matching type 1 (SHA-256) are used.
	Usage uint8
	// Mismatch publishes a digest of another key, which matches nothing.
	Mismatch bool
}

var labelRE = regexp.MustCompile(`^[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?$`)

// check fills defaults and says what is wrong.
func (c *Config) check() error {
	if len(c.Providers) == 0 {
		return fmt.Errorf("simnet: no providers")
	}
	c.BaseAddr = cmp.Or(c.BaseAddr, netip.AddrFrom4([4]byte{127, 0, 0, 2}))
	last := c.BaseAddr
	for range len(c.Providers) - 1 {
		last = last.Next()
	}
	if !loopback.Contains(c.BaseAddr) || !loopback.Contains(last) {
		return fmt.Errorf("simnet: provider addresses %v..%v leave 127.0.0.0/8", c.BaseAddr, last)
	}
	c.ConnectionGrace = cmp.Or(c.ConnectionGrace, 200*time.Millisecond)
	seen := map[string]bool{}
	for i := range c.Providers {
		p := &c.Providers[i]
		if !labelRE.MatchString(p.Name) {
			return fmt.Errorf("simnet: provider %d: name %q is not a lowercase DNS label", i, p.Name)
		}
		if seen[p.Name] {
			return fmt.Errorf("simnet: provider %q twice", p.Name)
		}
		seen[p.Name] = true
		if err := p.check(); err != nil {
			return fmt.Errorf("simnet: provider %q: %w", p.Name, err)
		}
	}
	return nil
}

var loopback = netip.MustParsePrefix("127.0.0.0/8")

func (p *ProviderConfig) check() error {
	switch {
	case p.MessageRate.Count < 0 || (p.MessageRate.Count > 0 && p.MessageRate.Per <= 0):
		return fmt.Errorf("message rate %v needs a positive count and period", p.MessageRate)
	case p.MaxConnections < 0 || p.MaxMessagesPerConnection < 0:
		return fmt.Errorf("negative limit")
	case p.RateSlack < 0 || (p.MessageRate.Per > 0 && p.RateSlack >= p.MessageRate.Per):
		return fmt.Errorf("rate slack %v must be shorter than the rate period", p.RateSlack)
	case p.DANE != nil && p.TLS == TLSOff:
		return fmt.Errorf("DANE without TLS")
	case p.DANE != nil && p.DANE.Usage != 2 && p.DANE.Usage != 3:
		return fmt.Errorf("DANE usage %d: want 2 or 3", p.DANE.Usage)
	}
	if p.Domains == 0 {
		p.Domains = 100
	}
	if len(p.MXHosts) == 0 {
		p.MXHosts = []string{"mx1." + p.Name + ".simnet.test", "mx2." + p.Name + ".simnet.test"}
	}
	if p.MessageRate.Per == 0 {
		p.MessageRate.Per = time.Minute // the period Stats measure in
	}
	if p.RateSlack == 0 {
		p.RateSlack = min(p.MessageRate.Per/20, time.Second)
	}
	p.ConnectionReply = orReply(p.ConnectionReply, 421, smtp.EnhancedCode{4, 7, 0}, "too many connections")
	p.RateReply = orReply(p.RateReply, 421, smtp.EnhancedCode{4, 7, 28}, p.Name+": rate limited, try again later")
	p.PerConnectionReply = orReply(p.PerConnectionReply, 421, smtp.EnhancedCode{4, 7, 0}, "too many messages on this connection")
	p.GreylistReply = orReply(p.GreylistReply, 450, smtp.EnhancedCode{4, 2, 0}, "greylisted, try again later")
	if m := p.MTASTS; m != nil {
		m.Mode = cmp.Or(m.Mode, "enforce")
		m.MaxAge = cmp.Or(m.MaxAge, 24*time.Hour)
		m.ID = cmp.Or(m.ID, "simnet1")
		if m.Mode != "enforce" && m.Mode != "testing" && m.Mode != "none" {
			return fmt.Errorf("MTA-STS mode %q", m.Mode)
		}
	}
	return nil
}

// orReply is r, or the given reply when r is the zero value.
func orReply(r smtptest.Reply, code int, enh smtp.EnhancedCode, msg string) smtptest.Reply {
	if r.Code != 0 {
		return r
	}
	return smtptest.Reply{Code: code, Enhanced: [3]int(enh), Message: msg}
}
