package simnet

import (
	"net/netip"
	"slices"
	"strings"
	"time"

	"github.com/postline/postline/internal/smtptest"
)

// injected pops the next injected reply, recording it as a refusal.
func (p *Provider) injected(tc *trackedConn) (smtptest.Reply, bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if len(p.inject) == 0 {
		return smtptest.Reply{}, false
	}
	r := p.inject[0]
	p.inject = p.inject[1:]
	p.refusals = append(p.refusals, Refusal{Time: time.Now(), Provider: p.cfg.Name, Client: tc.client,
		Stage: "mail", Reply: r, Cause: CauseInjected})
	return r, true
}

// startMessage checks a MAIL FROM at now against the connection's message
// limit and the client's message rate. It returns the transaction's slot
// in the rate period, or the reply refusing it (a violation).
func (p *Provider) startMessage(tc *trackedConn, now time.Time) (*slot, *smtptest.Reply) {
	p.mu.Lock()
	defer p.mu.Unlock()
	c := p.client(tc.client)
	if lim := p.cfg.MaxMessagesPerConnection; lim > 0 && tc.messages >= lim {
		return nil, p.refuseLocked(c, now, "mail", p.cfg.PerConnectionReply, CausePerConnection,
			Violation{Time: now, Client: tc.client, Kind: MessagesPerConnection, Count: tc.messages + 1, Limit: lim})
	}
	r := p.cfg.MessageRate
	if r.Count == 0 {
		return &slot{at: now}, nil
	}
	cut := now.Add(-r.Per)
	c.slots = slices.DeleteFunc(c.slots, func(s *slot) bool { return !s.at.After(cut) })
	from := now.Add(-(r.Per - p.cfg.RateSlack)) // sliding: (from, now]
	if p.cfg.RateWindow == Fixed {
		from = now.Truncate(r.Per).Add(-time.Nanosecond) // [period start, now]
	}
	n := 0
	for _, s := range c.slots {
		if s.at.After(from) {
			n++
		}
	}
	if n >= r.Count {
		return nil, p.refuseLocked(c, now, "mail", p.cfg.RateReply, CauseRate,
			Violation{Time: now, Client: tc.client, Kind: MessageRate, Count: n + 1, Limit: r.Count, Per: r.Per})
	}
	s := &slot{at: now}
	c.slots = append(c.slots, s)
	return s, nil
}

// refuseLocked records a violation and the refusal it gets, and returns
// the reply; p.mu must be held.
func (p *Provider) refuseLocked(c *client, now time.Time, stage string, r smtptest.Reply, cause Cause, v Violation) *smtptest.Reply {
	p.violate(c, v)
	p.refusals = append(p.refusals, Refusal{Time: now, Provider: p.cfg.Name, Client: v.Client, Stage: stage, Reply: r, Cause: cause})
	return &r
}

// violate records v; p.mu must be held.
func (p *Provider) violate(c *client, v Violation) {
	v.Provider = p.cfg.Name
	p.violations = append(p.violations, v)
	switch v.Kind {
	case ConnectionLimit:
		c.violations.Connections++
	case MessageRate:
		c.violations.MessageRate++
	case MessagesPerConnection:
		c.violations.MessagesPerConnection++
	}
}

// release takes a transaction that ended without a message out of the
// rate period.
func (p *Provider) release(addr netip.Addr, s *slot) {
	p.mu.Lock()
	defer p.mu.Unlock()
	c := p.client(addr)
	if i := slices.Index(c.slots, s); i >= 0 {
		c.slots = slices.Delete(c.slots, i, i+1)
	}
}

// accept records an accepted message.
func (p *Provider) accept(tc *trackedConn, m Message) {
	p.mu.Lock()
	c := p.client(tc.client)
	tc.messages++
	c.maxPerConn = max(c.maxPerConn, tc.messages)
	c.accepted = append(c.accepted, m.MailAt)
	p.msgs = append(p.msgs, m)
	p.mu.Unlock()
	p.net.arrived()
}

// greylisted says whether RCPT TO:<to> in a transaction from sender of
// addr is deferred at now, recording the refusal if so.
func (p *Provider) greylisted(addr netip.Addr, sender, to string, now time.Time) (smtptest.Reply, bool) {
	if !p.cfg.Greylist {
		return smtptest.Reply{}, false
	}
	k := greyKey{client: addr, from: strings.ToLower(sender), to: strings.ToLower(to)}
	p.mu.Lock()
	defer p.mu.Unlock()
	first, seen := p.greylist[k]
	if !seen {
		p.greylist[k] = now
		first = now
	}
	if seen && now.Sub(first) >= p.cfg.GreylistDelay {
		return smtptest.Reply{}, false
	}
	r := p.cfg.GreylistReply
	p.refusals = append(p.refusals, Refusal{Time: now, Provider: p.cfg.Name, Client: addr, Stage: "rcpt", Reply: r, Cause: CauseGreylist})
	return r, true
}
