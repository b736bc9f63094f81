package validation

import (
	"context"
	"errors"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/postline/postline/internal/apperr"
	"github.com/postline/postline/internal/emailaddr"
)

// Length limits: maxStrict is the API's strict-mode limit (characters);
// maxInput refuses absurd inputs in every mode before parsing, since no
// deliverable address comes near it and cache keys must stay small.
const (
	maxStrict = 254
	maxInput  = 1024
)

// check is one address between the cheap stages (prepare) and the DNS and
// cache stages (run).
type check struct {
	mode    Mode
	account int64 // whose sending history counts (ValidateAs)
	email   string
	addr    emailaddr.Address
	parsed  bool
	// r is the verdict so far; final when done.
	r    Result
	done bool
	// key is the cache key; "" when the verdict is reached without DNS
	// and is therefore never cached.
	key string
	// lower is the normalized address in lower case (lists, bounces).
	lower      string
	role, free bool
}

// Validate runs the pipeline on one address. Every verdict, including a
// syntax error or a DNS failure, is a Result. The error is non-nil only
// when the Cache or BounceHistory fails, the context ends, or mode is
// unknown.
//
// Validate uses no sending history (NoAccount); ValidateAs names the
// account whose history counts.
func (v *Validator) Validate(ctx context.Context, mode Mode, email string) (Result, error) {
	return v.ValidateAs(ctx, NoAccount, mode, email)
}

// ValidateAs is Validate for account: its own bounces (or every account's,
// for AllAccounts or a shared History) feed the spamtrap score.
func (v *Validator) ValidateAs(ctx context.Context, account int64, mode Mode, email string) (Result, error) {
	if err := mode.check(); err != nil {
		return Result{}, err
	}
	c := v.prepare(mode, email)
	c.account = account
	return v.run(ctx, &c)
}

// prepare runs the stages that need no I/O: syntax, strict rules,
// reserved names, operator lists and the disposable list.
func (v *Validator) prepare(mode Mode, email string) check {
	c := check{mode: mode, email: email, r: Result{Email: email, IsValid: true, Warnings: []string{}}}
	if len(email) > maxInput {
		c.fail(ReasonSyntax, "invalid syntax: address longer than "+strconv.Itoa(maxInput)+" bytes")
		return c
	}
	addr, err := emailaddr.Parse(email)
	if err != nil {
		msg := "invalid syntax"
		if pe, ok := errors.AsType[*emailaddr.ParseError](err); ok {
			msg += ": " + strings.ReplaceAll(pe.Detail, "_", " ") + " at offset " + strconv.Itoa(pe.Pos)
		}
		c.fail(ReasonSyntax, msg)
		return c
	}
	c.addr, c.parsed = addr, true
	c.lower = strings.ToLower(addr.Normalized())
	for _, w := range addr.Warnings {
		c.r.Warnings = append(c.r.Warnings, string(w))
	}
	c.role = isRoleAccount(addr.Local)
	c.free = !addr.Literal && isFreeProvider(addr.ASCIIDomain)
	if !addr.Literal {
		c.r.Suggestion = suggest(addr)
	}
	if mode == ModeStrict {
		if len(addr.Warnings) > 0 {
			c.fail(ReasonSyntax, "not allowed in strict mode: "+strings.Join(c.r.Warnings, ", "))
			return c
		}
		if utf8.RuneCountInString(email) > maxStrict {
			c.fail(ReasonSyntax, "invalid syntax: address longer than 254 characters in strict mode")
			return c
		}
	}
	if addr.Literal {
		if msg := reservedLiteral(addr.ASCIIDomain); msg != "" {
			c.fail(ReasonReservedDomain, msg)
		}
		c.done = true // no DNS for literals: the address names the host
		return c
	}
	if msg := reservedName(addr.ASCIIDomain); msg != "" {
		c.fail(ReasonReservedDomain, msg)
		return c
	}
	if !v.allowed(c.lower, addr.ASCIIDomain) {
		switch {
		case v.lists.BlockedAddress(c.lower):
			c.fail(ReasonBlocklisted, "address is blocklisted")
			return c
		case anySuffix(addr.ASCIIDomain, v.lists.BlockedDomain):
			c.fail(ReasonBlocklisted, "domain is blocklisted: "+addr.ASCIIDomain)
			return c
		case isDisposable(addr.ASCIIDomain):
			c.fail(ReasonDisposable, "disposable email domain: "+addr.ASCIIDomain)
			return c
		}
	}
	if v.offline {
		c.r.Warnings = append(c.r.Warnings, WarnDNSNotChecked)
		c.done = true
		return c
	}
	c.key = cacheKey(mode, addr)
	return c
}

// allowed reports whether the operator allow-lists the address or its
// domain (or a parent), which overrides blocklists and the disposable list.
func (v *Validator) allowed(lower, domain string) bool {
	return v.lists.AllowedAddress(lower) || anySuffix(domain, v.lists.AllowedDomain)
}

// fail records an invalid verdict reached without DNS.
func (c *check) fail(reason, msg string) {
	c.r.IsValid, c.r.Reason, c.r.Error = false, reason, &msg
	c.done = true
}

// run finishes c, then probes the mailbox when the request asked and the
// server permits it. Probe findings are the caller's: never cached with the
// verdict.
func (v *Validator) run(ctx context.Context, c *check) (Result, error) {
	r, err := v.runChecks(ctx, c)
	if err != nil || !r.IsValid || v.prober == nil || !mailboxCheck(ctx) || !c.parsed {
		return r, err
	}
	r.Mailbox = v.prober.probe(ctx, c.addr.Normalized(), c.addr.ASCIIDomain)
	return withVerdict(r), nil
}

// runChecks finishes c: from the cheap verdict, from the cache, or from DNS.
func (v *Validator) runChecks(ctx context.Context, c *check) (Result, error) {
	if c.done {
		return v.finish(ctx, c, c.r)
	}
	if r, ok, err := v.lookup(ctx, c.key); err != nil {
		return Result{}, err
	} else if ok {
		r.Email, r.Cached = c.email, true
		if r.Warnings == nil { // a store may not keep the empty list
			r.Warnings = []string{}
		}
		return v.score(ctx, c, r)
	}
	r := c.r
	reason, msg, implicit := v.checkDNS(ctx, c.addr.ASCIIDomain)
	if err := ctx.Err(); err != nil {
		return Result{}, err
	}
	if implicit {
		r.Warnings = append(r.Warnings, WarnImplicitMX)
	}
	if reason != "" {
		r.IsValid, r.Reason, r.Error = false, reason, &msg
	}
	r, err := v.finish(ctx, c, r)
	if err != nil || reason == ReasonDNSUnavailable {
		return r, err
	}
	// The cache holds what is the same for every caller: the score without
	// anyone's sending history (lookup scores it again for each caller).
	return r, v.store(ctx, c.key, v.scored(c, r, false))
}

// finish adds the non-RFC warnings, the time and the score to a fresh
// verdict.
func (v *Validator) finish(ctx context.Context, c *check, r Result) (Result, error) {
	if c.role {
		r.Warnings = append(r.Warnings, WarnRoleAccount)
	}
	if c.free {
		r.Warnings = append(r.Warnings, WarnFreeProvider)
	}
	r.ValidatedAt = stamp(v.now())
	return v.score(ctx, c, r)
}

// score computes the spamtrap score of r, asking BounceHistory live, so a
// cached verdict reflects bounces recorded after it was cached.
func (v *Validator) score(ctx context.Context, c *check, r Result) (Result, error) {
	bounced := false
	if v.bounces != nil && c.parsed {
		var err error
		if bounced, err = v.bounces.HardBounced(ctx, c.account, c.lower); err != nil {
			return Result{}, apperr.Wrap(apperr.Unavailable, err, "validation: bounce history unavailable")
		}
	}
	return v.scored(c, r, bounced), nil
}

func (v *Validator) scored(c *check, r Result, bounced bool) Result {
	f := v.features(c, r, bounced)
	r.SpamtrapScore = f.score()
	r.IsSpamtrap = r.SpamtrapScore >= v.threshold
	return withVerdict(r)
}

// stamp is the form ValidatedAt takes: UTC, millisecond precision, so the
// value is the same whether it comes back from the LRU or a SQL store.
func stamp(t time.Time) time.Time { return t.UTC().Truncate(time.Millisecond) }
