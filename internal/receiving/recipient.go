package receiving

import (
	"context"
	"strconv"
	"strings"
	"sync"

	"github.com/postline/postline/internal/apperr"
	"github.com/postline/postline/internal/domain"
	"github.com/postline/postline/internal/inboundroute"
)

// Verdict is what Recipient decided about an address.
type Verdict int

// The verdicts.
const (
	// NotOurs: no domain receives mail for the address (550 5.1.1).
	NotOurs Verdict = iota
	// NoRoute: the domain receives, but no route takes the address.
	NoRoute
	// Accept: a route takes the address whatever the message says.
	Accept
	// AfterData: a route may take it, depending on the message's header.
	AfterData
	// TooCostly: the account's routes cost more to match against the
	// address than inboundroute.MaxMatchCost allows.
	TooCostly
)

// Decision is Recipient's answer.
type Decision struct {
	Verdict Verdict
	Domain  domain.Domain // set unless NotOurs
}

// Recipient decides at RCPT whether the address is taken (see the package
// documentation).
func (s *Service) Recipient(ctx context.Context, addr string) (Decision, error) {
	at := strings.LastIndexByte(addr, '@')
	if at <= 0 || at == len(addr)-1 {
		return Decision{Verdict: NotOurs}, nil
	}
	d, err := s.deps.Domains.Receiving(ctx, addr[at+1:])
	if apperr.CodeOf(err) == apperr.NotFound {
		return Decision{Verdict: NotOurs}, nil
	}
	if err != nil {
		return Decision{}, err
	}
	routes, err := s.accountRoutes(ctx, d.AccountID)
	if err != nil {
		return Decision{}, err
	}
	v := decide(routes, addr)
	if v == TooCostly {
		s.cfg.Logger.Warn("inbound: the account's routes cost too much to match a recipient (inboundroute.MaxMatchCost); refused",
			"account", d.AccountID, "domain", d.Name)
	}
	return Decision{Verdict: v, Domain: d}, nil
}

// decide walks the routes in evaluation order with the recipient alone: a
// catch_all() takes whatever no earlier route took, so reaching one means
// some route takes the recipient; a route deciding on the recipient that
// matches takes it; a route whose recipient filters match but whose
// header filters are yet to be read may.
func decide(routes []*inboundroute.Route, rcpt string) Verdict {
	maybe := false
	var m inboundroute.Meter
	for _, r := range routes {
		if r.CatchAll() {
			return Accept
		}
		if ok, _ := r.MatchRecipientWithin(rcpt, &m); !ok {
			if m.Spent() {
				return TooCostly
			}
			continue
		}
		if r.DecidesOnRecipient() {
			return Accept
		}
		maybe = true
	}
	if maybe {
		return AfterData
	}
	return NoRoute
}

// accountRoutes are the account's routes, compiled, in evaluation order.
// The definitions are read every time (a route changed by any process
// applies to the next recipient); compiling is cached by definition.
func (s *Service) accountRoutes(ctx context.Context, accountID int64) ([]*inboundroute.Route, error) {
	defs, _, err := s.deps.Routes.List(ctx, accountID, 0, inboundroute.MaxPerAccount)
	if err != nil {
		return nil, err
	}
	routes := make([]*inboundroute.Route, 0, len(defs))
	for _, d := range defs {
		r, err := s.routes.compile(d)
		if err != nil {
			// Stored routes compiled when stored; a limit lowered since
			// may refuse one: it takes nothing, and the operator hears.
			s.cfg.Logger.Warn("inbound route no longer compiles; skipped", "route", d.ID, "account", accountID, "error", err)
			continue
		}
		routes = append(routes, r)
	}
	inboundroute.Sort(routes)
	return routes, nil
}

// routeCache keeps compiled routes by their definition, so that a busy
// domain does not compile its account's regular expressions per
// recipient. An edited route is a new key (every field Compile reads is
// in it, the format too); the cache is emptied when it holds
// maxCachedRoutes.
type routeCache struct {
	mu sync.Mutex
	m  map[string]*inboundroute.Route
}

const maxCachedRoutes = 20000

func newRouteCache() *routeCache { return &routeCache{m: map[string]*inboundroute.Route{}} }

func (c *routeCache) compile(d inboundroute.Definition) (*inboundroute.Route, error) {
	key := d.ID + "\x00" + strconv.Itoa(d.Priority) + "\x00" + d.Format + "\x00" + d.Expression + "\x00" + strings.Join(d.Actions, "\x00")
	c.mu.Lock()
	r, ok := c.m[key]
	c.mu.Unlock()
	if ok {
		return r, nil
	}
	r, err := d.Compile()
	if err != nil {
		return nil, err
	}
	c.mu.Lock()
	if len(c.m) >= maxCachedRoutes {
		clear(c.m)
	}
	c.m[key] = r
	c.mu.Unlock()
	return r, nil
}
