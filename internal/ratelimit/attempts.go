package ratelimit

import (
	"context"
	"strings"
	"time"
)

// Attempts limits failed credential checks (SMTP AUTH, console sign-in)
// per login and per client address. Only failures count, so a client that
// authenticates correctly on every connection is never slowed down; a
// guesser is stopped after PerLogin tries at one login or PerAddress tries
// from one address, until the window passes.
type Attempts struct {
	Limiter    *Limiter
	PerLogin   int           // failures per login per window; 0 means 10
	PerAddress int           // failures per client address per window; 0 means 50
	Window     time.Duration // 0 means 15 minutes
	// Prefix keeps one door's counts apart from another's when they must
	// not share a budget ("" shares them: a guesser cannot move from the
	// console to SMTP to get fresh tries).
	Prefix string
}

func (a *Attempts) limits() (perLogin, perAddr int, window time.Duration) {
	perLogin, perAddr, window = a.PerLogin, a.PerAddress, a.Window
	if perLogin <= 0 {
		perLogin = 10
	}
	if perAddr <= 0 {
		perAddr = 50
	}
	if window <= 0 {
		window = 15 * time.Minute
	}
	return
}

func (a *Attempts) keys(login, addr string) (string, string) {
	return a.Prefix + "auth-login:" + strings.ToLower(login), a.Prefix + "auth-addr:" + addr
}

// Blocked reports whether login or addr has used up its failures in the
// current window, and when that window ends. A blocked caller must not even
// have its credentials checked, so a correct guess after the limit teaches
// nothing.
func (a *Attempts) Blocked(ctx context.Context, login, addr string) (bool, time.Time, error) {
	perLogin, perAddr, window := a.limits()
	start := a.Limiter.now().Truncate(window)
	lk, ak := a.keys(login, addr)
	n, err := a.Limiter.counter.Get(ctx, ak, start)
	if err != nil {
		return false, time.Time{}, err
	}
	if n >= int64(perAddr) {
		return true, start.Add(window), nil
	}
	if login != "" {
		if n, err = a.Limiter.counter.Get(ctx, lk, start); err != nil {
			return false, time.Time{}, err
		}
		if n >= int64(perLogin) {
			return true, start.Add(window), nil
		}
	}
	return false, time.Time{}, nil
}

// Failed counts one failed attempt against login and addr.
func (a *Attempts) Failed(ctx context.Context, login, addr string) error {
	_, _, window := a.limits()
	start := a.Limiter.now().Truncate(window)
	lk, ak := a.keys(login, addr)
	if _, err := a.Limiter.counter.Incr(ctx, ak, start, 1, window); err != nil {
		return err
	}
	if login == "" {
		return nil
	}
	_, err := a.Limiter.counter.Incr(ctx, lk, start, 1, window)
	return err
}
