package ratelimit

import (
	"context"
	"net/netip"
	"strings"
	"sync"
	"time"

	"github.com/postline/postline/internal/connlimit"
)

// Attempts limits credential checks (SMTP AUTH, console sign-in) per login
// and per client address. An attempt is counted before its credentials
// are checked, by one atomic increment, so that parallel guesses cannot
// all pass a check made before any of them failed: at most PerLogin
// guesses at one login, and PerAddress from one address, are ever
// checked in a window. A success gives its slot back and clears the
// login's failures, so a client that authenticates correctly on every
// connection is never slowed down and a user who mistyped a few times is
// not left one typo from a lock-out.
type Attempts struct {
	Limiter    *Limiter
	PerLogin   int           // checked failures per login per window; 0 means 10
	PerAddress int           // checked failures per client address per window; 0 means 50
	Window     time.Duration // 0 means 15 minutes
	// Prefix keeps one door's counts apart from another's when they must
	// not share a budget ("" shares them: a guesser cannot move from the
	// console to SMTP to get fresh tries).
	Prefix string
	// Wait is how long a blocked attempt waits for this process's
	// attempts in flight at the same login or address to end (0 means
	// 2 s): they hold slots that a success gives back, so a client opening
	// many sessions at once with the right key is never refused for its
	// own parallelism.
	Wait time.Duration

	flightOnce sync.Once
	flights    *flights
}

// flights counts a process's attempts between Begin and their outcome,
// per key, and wakes the blocked attempts waiting for one to end.
type flights struct {
	mu      sync.Mutex
	n       map[string]int
	changed chan struct{}
}

func (f *flights) add(d int, keys ...string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, k := range keys {
		if f.n[k] += d; f.n[k] <= 0 {
			delete(f.n, k)
		}
	}
	if d < 0 {
		close(f.changed)
		f.changed = make(chan struct{})
	}
}

// forget takes back an add of an attempt that was never counted, waking
// no one.
func (f *flights) forget(keys ...string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, k := range keys {
		if f.n[k]--; f.n[k] <= 0 {
			delete(f.n, k)
		}
	}
}

// ended is closed when an attempt in flight next ends.
func (f *flights) ended() <-chan struct{} {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.changed
}

// busy reports whether an attempt at one of keys is in flight, and the
// channel closed when one ends.
func (f *flights) busy(keys ...string) (bool, <-chan struct{}) {
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, k := range keys {
		if f.n[k] > 0 {
			return true, f.changed
		}
	}
	return false, nil
}

func (a *Attempts) inFlight() *flights {
	a.flightOnce.Do(func() { a.flights = &flights{n: map[string]int{}, changed: make(chan struct{})} })
	return a.flights
}

// Attempt is one credential check, counted by Begin. Its zero value (from
// a failed Begin) gives nothing back.
type Attempt struct {
	// Blocked says the login or the address has used up its attempts: the
	// credentials must not even be checked, so a correct guess past the
	// limit teaches nothing. Until is when the window ends.
	Blocked bool
	Until   time.Time

	a           *Attempts
	start       time.Time
	login, addr string
	counted     bool
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
	if ip, err := netip.ParseAddr(addr); err == nil {
		addr = connlimit.ClientKey(ip.Unmap()).String() // an IPv6 client's /64 is one address
	}
	return a.Prefix + "auth-login:" + strings.ToLower(login), a.Prefix + "auth-addr:" + addr
}

// Begin counts one attempt against login and addr before it is checked.
// Unless the answer is Blocked, the caller checks the credentials and then
// calls Succeeded, Failed, or Uncounted when nothing was checked after
// all. A blocked attempt first waits (Wait) for this process's attempts in
// flight at the same login or address, whose success may free a slot. An error means the counts
// could not be read or written; the caller decides whether to check
// anyway.
func (a *Attempts) Begin(ctx context.Context, login, addr string) (Attempt, error) {
	wait := a.Wait
	if wait <= 0 {
		wait = 2 * time.Second
	}
	timer := time.NewTimer(wait)
	defer timer.Stop()
	lk, ak := a.keys(login, addr)
	f := a.inFlight()
	for {
		ended := f.ended()
		// In flight before it is counted: an attempt blocked by this one's
		// count must find it in flight and wait for it, not give up in the
		// moment between the count and the registration (one of 40
		// parallel right keys was refused so on Redis).
		f.add(1, lk, ak)
		at, err := a.begin(ctx, login, addr)
		if !at.counted {
			f.forget(lk, ak) // it holds no slot: its end frees none, so it wakes no one
		}
		if err != nil || !at.Blocked {
			return at, err
		}
		// Blocked: by failures, or by attempts being checked here whose
		// success gives their slots back (or gave them back while this one
		// read the counts: then it reads them again).
		select {
		case <-ended:
			continue
		default:
		}
		busy, changed := f.busy(lk, ak)
		if !busy {
			return at, nil
		}
		select {
		case <-changed:
		case <-timer.C:
			return at, nil
		case <-ctx.Done():
			return at, nil
		}
	}
}

func (a *Attempts) begin(ctx context.Context, login, addr string) (Attempt, error) {
	perLogin, perAddr, window := a.limits()
	c := a.Limiter.counter
	start := a.Limiter.now().Truncate(window)
	lk, ak := a.keys(login, addr)
	blocked := Attempt{Blocked: true, Until: start.Add(window)}
	// A read first: a flood at a blocked login or address costs no write.
	if n, err := c.Get(ctx, ak, start); err != nil {
		return Attempt{}, err
	} else if n >= int64(perAddr) {
		return blocked, nil
	}
	if login != "" {
		if n, err := c.Get(ctx, lk, start); err != nil {
			return Attempt{}, err
		} else if n >= int64(perLogin) {
			return blocked, nil
		}
	}
	n, err := c.Incr(ctx, ak, start, 1, window)
	if err != nil {
		return Attempt{}, err
	}
	if n > int64(perAddr) { // others took the last slots since the read
		return blocked, c.Decr(ctx, ak, start)
	}
	if login != "" {
		if n, err = c.Incr(ctx, lk, start, 1, window); err != nil {
			c.Decr(ctx, ak, start) //nolint:errcheck // the error returned says more
			return Attempt{}, err
		}
		if n > int64(perLogin) {
			// Only checked attempts count: the address's slot goes back,
			// the login's count past its limit changes nothing.
			return blocked, c.Decr(ctx, ak, start)
		}
	}
	return Attempt{a: a, start: start, login: login, addr: addr, counted: true}, nil
}

// Succeeded records that the attempt's credentials were right: the
// address's slot is given back and the login's failures are cleared.
func (t Attempt) Succeeded(ctx context.Context) error {
	return t.giveBack(ctx, true)
}

// Uncounted gives the attempt's slots back without clearing anything: its
// credentials were not checked (the server was busy or failed), so it
// teaches a guesser nothing and must not use up a user's tries.
func (t Attempt) Uncounted(ctx context.Context) error {
	return t.giveBack(ctx, false)
}

// giveBack returns the address's slot and the login's, or with clear
// resets the login's count; the attempt is then no longer in flight. The
// zero Attempt (from a failed Begin) gives nothing back.
func (t Attempt) giveBack(ctx context.Context, clear bool) error {
	if !t.counted {
		return nil
	}
	lk, ak := t.a.keys(t.login, t.addr)
	defer t.a.inFlight().add(-1, lk, ak)
	if err := t.a.Limiter.counter.Decr(ctx, ak, t.start); err != nil {
		return err
	}
	if t.login == "" {
		return nil
	}
	if clear {
		return t.a.Limiter.counter.Reset(ctx, lk, t.start)
	}
	return t.a.Limiter.counter.Decr(ctx, lk, t.start)
}

// Failed records that the attempt's credentials were wrong: it stays
// counted (Begin counted it) and no longer holds back the attempts waiting
// for it.
func (t Attempt) Failed() {
	if t.counted {
		lk, ak := t.a.keys(t.login, t.addr)
		t.a.inFlight().add(-1, lk, ak)
	}
}
