package account_test

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/postline/postline/internal/account"
	"github.com/postline/postline/internal/apperr"
	"github.com/postline/postline/internal/store"
	"github.com/postline/postline/internal/testutil"
)

// setup returns the account service on a fresh SQLite database with one
// account, alice, whose password is pw.
func setup(t *testing.T) (*account.Service, string) {
	t.Helper()
	s := account.NewService(store.NewAccounts(testutil.OpenDB(t, store.SQLite)), nil)
	ctx := context.Background()
	if _, err := s.CreateUser(ctx, "alice"); err != nil {
		t.Fatal(err)
	}
	const pw = "correct horse battery"
	if err := s.SetPassword(ctx, "alice", pw); err != nil {
		t.Fatal(err)
	}
	return s, pw
}

// TestPasswordChecksBounded: 24 sign-ins at once (right and wrong
// passwords, known and unknown logins) never run more argon2id checks at
// once than the bound, and every one is answered as it should be.
func TestPasswordChecksBounded(t *testing.T) {
	t.Parallel()
	s, pw := setup(t)
	s.SetPasswordCheckConcurrency(3)
	var running, most atomic.Int32
	account.SetVerifyForTest(s, func(password, phc string) bool {
		n := running.Add(1)
		defer running.Add(-1)
		for m := most.Load(); n > m && !most.CompareAndSwap(m, n); m = most.Load() {
		}
		// Overlap the checks, as argon2id's tens of ms would, without its
		// CPU: 24 real hashes on a busy CI machine outlast the 2 s wait.
		time.Sleep(5 * time.Millisecond)
		return password == pw
	})
	var wg sync.WaitGroup
	for i := range 24 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			login, secret, want := "alice", "wrong password!", apperr.Unauthorized
			switch i % 3 {
			case 0:
				secret, want = pw, ""
			case 1:
				login = "nobody"
			}
			if _, err := s.CheckPassword(context.Background(), login, secret); apperr.CodeOf(err) != want {
				t.Errorf("check %d (%s): %v, want %q", i, login, err, want)
			}
		}()
	}
	wg.Wait()
	if m := most.Load(); m > 3 || m < 2 {
		t.Fatalf("at most %d checks ran at once, want 3 (the bound) or close to it", m)
	}
}

// TestPasswordChecksBusy: past the wait for a turn, a check is refused as
// rate_limited with a message naming the setting, without being made; a
// turn given back serves the next one.
func TestPasswordChecksBusy(t *testing.T) {
	t.Parallel()
	s, pw := setup(t)
	account.SetPasswordGateForTest(s, 1, 50*time.Millisecond)
	hold, entered := make(chan struct{}), make(chan struct{}, 1)
	var checks atomic.Int32
	account.SetVerifyForTest(s, func(password, phc string) bool {
		if checks.Add(1) == 1 {
			entered <- struct{}{}
			<-hold
		}
		return account.VerifyPassword(password, phc)
	})
	first := make(chan error, 1)
	go func() {
		_, err := s.CheckPassword(context.Background(), "alice", pw)
		first <- err
	}()
	<-entered
	start := time.Now()
	_, err := s.CheckPassword(context.Background(), "alice", pw)
	if e, ok := apperr.As(err); !ok || e.Code != apperr.RateLimited || e.Message != account.MsgPasswordChecksBusy {
		t.Fatalf("a check while the only turn is held: %v, want rate_limited %q", err, account.MsgPasswordChecksBusy)
	}
	if waited := time.Since(start); waited < 50*time.Millisecond {
		t.Errorf("refused after %s, want after the 50ms wait", waited)
	}
	if n := checks.Load(); n != 1 {
		t.Errorf("%d checks made, want 1: the refused one must not be checked", n)
	}
	close(hold)
	if err := <-first; err != nil {
		t.Fatalf("the held check: %v", err)
	}
	if _, err := s.CheckPassword(context.Background(), "alice", pw); err != nil {
		t.Fatalf("after the turn came back: %v", err)
	}
}
