package account

import (
	"context"
	"time"

	"github.com/postline/postline/internal/apperr"
)

// Password checks (argon2id, 19 MiB and tens of milliseconds each) are
// the one thing a client without credentials can make the server do at
// will: unbounded, 150 sign-ins at once took 1.8 GB. At most
// DefaultPasswordChecks run at once; others wait up to PasswordCheckWait
// for a turn and are then refused, which a client can retry.
const (
	DefaultPasswordChecks = 4
	PasswordCheckWait     = 2 * time.Second
)

// MsgPasswordChecksBusy is the refusal's message; tests match on it.
const MsgPasswordChecksBusy = "Too many password checks at once (password-check-concurrency); try again in a few seconds"

// passwordGate holds the turns of argon2id work.
type passwordGate struct {
	turns chan struct{}
	wait  time.Duration
}

func newPasswordGate(n int, wait time.Duration) passwordGate {
	return passwordGate{turns: make(chan struct{}, max(n, 1)), wait: wait}
}

// enter waits for a turn, at most g.wait; the caller calls the returned
// func when its work is done. Past the wait it is apperr.RateLimited.
func (g passwordGate) enter(ctx context.Context) (func(), error) {
	select {
	case g.turns <- struct{}{}:
		return g.leave, nil
	default:
	}
	t := time.NewTimer(g.wait)
	defer t.Stop()
	select {
	case g.turns <- struct{}{}:
		return g.leave, nil
	case <-t.C:
		return nil, apperr.Errorf(apperr.RateLimited, MsgPasswordChecksBusy)
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

func (g passwordGate) leave() { <-g.turns }

// SetPasswordCheckConcurrency bounds the password checks and hashings
// running at once (DefaultPasswordChecks unless set). Call it before the
// service is used.
func (s *Service) SetPasswordCheckConcurrency(n int) {
	s.gate = newPasswordGate(n, PasswordCheckWait)
}
