package sending

import (
	"context"
	"fmt"
	"log/slog"
	"strconv"
	"strings"
	"sync"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/postline/postline/internal/delivery"
	"github.com/postline/postline/internal/shaping"
	"github.com/postline/postline/internal/suspend"
	"github.com/prometheus/client_golang/prometheus"
)

// Automation carries out the automation rules of the shaping files: every
// reply an attempt gets is matched against the rules in force for its
// site, and a rule that matches (Threshold times within its period, or at
// once) puts its actions in force for its duration, as rows of the
// suspensions table (package suspend) with created_by "automation":
//
//   - Suspend: a site suspension, which holds every delivery to the site
//     in every process within a second (hold.go), without an attempt;
//   - SuspendTenant: a suspension of the sending account at the site
//     (kind tenant, "ACCOUNT_ID@SITE"), held the same way;
//   - SetConfig: an override of one limit of the site (kind config,
//     "KEY@SITE"), which delivery applies at every admission (Overrides).
//
// Thresholds are counted per site and rule in this process: with several
// processes, each counts the replies it got. What a rule puts in force is
// shared by all of them and survives restarts.
type Automation struct {
	cfg     AutomationConfig
	actions *prometheus.CounterVec

	mu   sync.Mutex
	seen map[string][]time.Time // site and rule: when replies matched, within the threshold's period
	// known is what this process last saw in force, so that Watch can log
	// when it ends.
	known map[int64]suspend.Suspension
	// applying is what goroutines are putting in force: replies that
	// match together do not put it in force twice.
	applying map[string]bool
}

// AutomationConfig configures Automation.
type AutomationConfig struct {
	Suspensions *suspend.Service
	Logger      *slog.Logger
	Now         func() time.Time
	// Registry gets postline_shaping_actions_total{action}; nil: none.
	Registry prometheus.Registerer
}

// NewAutomation returns the automation over cfg.Suspensions.
func NewAutomation(cfg AutomationConfig) *Automation {
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	a := &Automation{cfg: cfg, seen: map[string][]time.Time{}, known: map[int64]suspend.Suspension{},
		applying: map[string]bool{},
		actions: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "postline_shaping_actions_total",
			Help: "Actions of automation rules put in force (Suspend, SuspendTenant, SetConfig)."}, []string{"action"})}
	for _, k := range []shaping.ActionKind{shaping.ActionSuspend, shaping.ActionSuspendTenant, shaping.ActionSetConfig} {
		a.actions.WithLabelValues(string(k)) // exported at 0 before the first
	}
	if cfg.Registry != nil {
		cfg.Registry.MustRegister(a.actions)
	}
	return a
}

// Reply is one reply an attempt got, with what it is matched against.
type Reply struct {
	Site      string
	AccountID int64
	Rules     []shaping.Rule
	// Line is "CODE ENHANCED TEXT" on one line.
	Line string
	// Internal marks a reply Postline made up itself (no server said it):
	// only rules with match_internal see it.
	Internal bool
}

// ReplyOf is the reply of an attempt's outcome: the server's answer, or
// Postline's own description when no server answered.
func ReplyOf(res delivery.Result, err error) (line string, internal bool) {
	code, enhanced, msg := res.Code, res.Enhanced, res.Message
	if err != nil {
		e := delivery.Classify(err)
		code, enhanced, msg, internal = e.Code, e.Enhanced, e.Message, e.Code == 0
	}
	parts := make([]string, 0, 3)
	if code != 0 {
		parts = append(parts, strconv.Itoa(code))
	}
	if enhanced != "" {
		parts = append(parts, enhanced)
	}
	parts = append(parts, strings.Join(strings.Fields(printable(msg)), " "))
	return strings.Join(parts, " "), internal
}

// printable replaces control characters (a remote server's escape
// sequences, which the CLI would print to the operator's terminal) with
// spaces.
func printable(s string) string {
	return strings.Map(func(r rune) rune {
		if unicode.IsControl(r) {
			return ' '
		}
		return r
	}, s)
}

// Bounds of what an action keeps of the reply that put it in force: the
// whole reply (up to delivery's 32 KiB) is matched, but the suspension's
// reason is at most 500 bytes (package suspend), and logs and the
// operator's pages need only its start.
const (
	maxActionReply  = 300
	maxActionReason = 500
)

// clip shortens s to at most n bytes, on a character boundary, marking
// the cut with "...".
func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	cut := n - len("...")
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + "..."
}

// Observe matches r against its rules and puts in force the actions of
// those that fire.
func (a *Automation) Observe(ctx context.Context, r Reply) {
	if r.Site == "" {
		return
	}
	for _, rule := range r.Rules {
		if r.Internal && !rule.MatchInternal || !rule.Matches(r.Line) || !a.fires(r.Site, rule) {
			continue
		}
		for _, act := range rule.Actions {
			a.apply(ctx, r, rule, act)
		}
	}
}

// fires counts a match of rule at site and reports whether its actions
// apply now: at once without a threshold, else on the Nth match within
// the period (and the count starts over).
func (a *Automation) fires(site string, rule shaping.Rule) bool {
	if !rule.Threshold.IsSet() {
		return true
	}
	now := a.cfg.Now()
	key := site + "\x00" + rule.ID
	a.mu.Lock()
	defer a.mu.Unlock()
	times := a.seen[key]
	for len(times) > 0 && !times[0].After(now.Add(-rule.Threshold.Per)) {
		times = times[1:]
	}
	times = append(times, now)
	if len(times) < rule.Threshold.Count {
		a.seen[key] = times
		return false
	}
	delete(a.seen, key)
	return true
}

// apply puts act in force, unless the same rule already has it in force
// (replies to deliveries under way when it started repeat it).
func (a *Automation) apply(ctx context.Context, r Reply, rule shaping.Rule, act shaping.Action) {
	kind, value := suspend.Site, r.Site
	switch act.Kind {
	case shaping.ActionSuspendTenant:
		kind, value = suspend.Tenant, fmt.Sprintf("%d@%s", r.AccountID, r.Site)
	case shaping.ActionSetConfig:
		kind, value = suspend.Override, act.Name+"@"+r.Site
	}
	value = strings.ToLower(value)
	done, ok := a.claim(string(kind) + "\x00" + value + "\x00" + rule.ID + "\x00" + act.String())
	if !ok {
		return // replies that came together: the first puts it in force
	}
	defer done()
	if sp, ok := a.cfg.Suspensions.Holding(ctx, kind, value); ok && sp.Rule == rule.ID && sp.Action == act.String() {
		return // in force already, put there by this process or another
	}
	reply := clip(r.Line, maxActionReply)
	sp, err := a.cfg.Suspensions.Suspend(ctx, suspend.Request{Kind: kind, Value: value, Duration: rule.Duration,
		Reason: clip(fmt.Sprintf("automation rule %s (%s) matched %q", rule.ID, rule.Origin, reply), maxActionReason),
		By:     suspend.ByAutomation, Action: act.String(), Rule: rule.ID, Reply: reply})
	if err != nil {
		a.cfg.Logger.Error("shaping: an automation action could not be put in force", "site", r.Site, "action", act.String(),
			"rule", rule.ID, "error", err)
		return
	}
	a.actions.WithLabelValues(string(act.Kind)).Inc()
	a.mu.Lock()
	a.known[sp.ID] = sp
	a.mu.Unlock()
	a.cfg.Logger.Warn("shaping: automation action in force", "site", r.Site, "action", act.String(), "target", value,
		"rule", rule.ID, "origin", rule.Origin, "reply", reply, "until", sp.Until)
}

// claim reports whether this process may put the action key in force
// now: not while another goroutine is doing it (after that, Holding sees
// it). done ends the claim.
func (a *Automation) claim(key string) (done func(), ok bool) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.applying[key] {
		return nil, false
	}
	a.applying[key] = true
	return func() {
		a.mu.Lock()
		delete(a.applying, key)
		a.mu.Unlock()
	}, true
}

// Overrides is the limits SetConfig actions override for site now, from
// the suspensions' copy (at most a second old): delivery.Config.Overrides.
func (a *Automation) Overrides(ctx context.Context, site string) shaping.Limits {
	suffix := "@" + strings.ToLower(site)
	var l shaping.Limits
	for _, sp := range a.cfg.Suspensions.All(ctx, func(sp suspend.Suspension) bool {
		return sp.Kind == suspend.Override && strings.HasSuffix(sp.Value, suffix)
	}) {
		if o, ok := override(sp.Action); ok {
			l = l.With(o)
		}
	}
	return l
}

// override reads "SetConfig KEY=VALUE" back into the Limits it sets.
func override(action string) (shaping.Limits, bool) {
	name, value, ok := strings.Cut(strings.TrimPrefix(action, string(shaping.ActionSetConfig)+" "), "=")
	if !ok {
		return shaping.Limits{}, false
	}
	if n, err := strconv.ParseInt(value, 10, 64); err == nil {
		if l, err := shaping.ParseSetting(name, n); err == nil {
			return l, true
		}
	}
	l, err := shaping.ParseSetting(name, value)
	return l, err == nil
}

// InForce lists the actions automation rules have in force now, read
// from the store.
func (a *Automation) InForce(ctx context.Context) ([]suspend.Suspension, error) {
	return InForce(ctx, a.cfg.Suspensions)
}

// InForce lists the actions automation rules have in force now, read
// from the store (the CLI's, which runs no Automation).
func InForce(ctx context.Context, s *suspend.Service) ([]suspend.Suspension, error) {
	return byAutomation(s.List(ctx))
}

// byAutomation keeps the rows automation rules made of a listing.
func byAutomation(list []suspend.Suspension, err error) ([]suspend.Suspension, error) {
	if err != nil {
		return nil, err
	}
	out := list[:0]
	for _, sp := range list {
		if sp.CreatedBy == suspend.ByAutomation {
			out = append(out, sp)
		}
	}
	return out, nil
}

// watchEvery is how often Watch looks for actions that ended.
const watchEvery = time.Second

// Watch logs, until ctx ends, the end of every action this process saw in
// force (put in force here or elsewhere), within a second of it.
func (a *Automation) Watch(ctx context.Context) {
	t := time.NewTicker(watchEvery)
	defer t.Stop()
	for {
		a.watchOnce(ctx)
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// watchOnce compares what is in force with what was, logging the ends.
func (a *Automation) watchOnce(ctx context.Context) {
	list, err := a.InForce(ctx)
	if err != nil {
		return
	}
	now := map[int64]suspend.Suspension{}
	for _, sp := range list {
		now[sp.ID] = sp
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	for id, sp := range a.known {
		if _, ok := now[id]; !ok {
			a.cfg.Logger.Warn("shaping: automation action ended", "kind", string(sp.Kind), "target", sp.Value,
				"action", sp.Action, "rule", sp.Rule, "reply", sp.Reply)
		}
	}
	a.known = now
}

// UseAutomation makes the worker match the replies its attempts get
// against the automation rules. Call it before Start.
func (w *Worker) UseAutomation(a *Automation) { w.auto = a }

// react hands the reply an admitted attempt got to the automation.
func (w *Worker) react(ctx context.Context, tk *delivery.Ticket, accountID int64, res delivery.Result, err error) {
	if w.auto == nil || tk == nil || len(tk.Automation()) == 0 {
		return
	}
	line, internal := ReplyOf(res, err)
	w.auto.Observe(ctx, Reply{Site: tk.Site(), AccountID: accountID, Rules: tk.Automation(), Line: line, Internal: internal})
}

// ActionSite is the site an automation action applies to: the value of a
// site suspension, the part after "@" of a tenant's or an override's.
func ActionSite(sp suspend.Suspension) string {
	if sp.Kind == suspend.Site {
		return sp.Value
	}
	return sp.Value[strings.LastIndexByte(sp.Value, '@')+1:]
}

// History lists the actions automation rules put in force within the
// suspensions' retention (7 days), newest first: those in force and those
// that ended, with when and how (suspend.Suspension.End).
func History(ctx context.Context, s *suspend.Service) ([]suspend.Suspension, error) {
	return byAutomation(s.History(ctx))
}

// AutomationHistory is History for the operator's API and console.
func (q *Queue) AutomationHistory(ctx context.Context) ([]suspend.Suspension, error) {
	return History(ctx, q.ctl.Suspensions)
}

// Now is the queue control's clock, what the history's ends are read at.
func (q *Queue) Now() time.Time { return q.now() }

// AutomationActions lists the actions automation rules have in force now,
// for the operator.
func (q *Queue) AutomationActions(ctx context.Context) ([]suspend.Suspension, error) {
	return InForce(ctx, q.ctl.Suspensions)
}
