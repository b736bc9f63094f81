package app_test

import (
	"context"
	"crypto/tls"
	"fmt"
	"net"
	"net/smtp"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/postline/postline/internal/apitest"
	"github.com/postline/postline/internal/config"
	"github.com/postline/postline/internal/testutil"
)

// TestSignInParallelGuesses: 150 wrong passwords sent at once for one
// login are checked at most the limit's number of times (10): every other
// one answers the lock-out, and so does the right password afterwards.
// Another user who mistypes a few times still signs in, again and again:
// a success clears the login's failures. On both stores (the database
// counts the attempts on PostgreSQL).
func TestSignInParallelGuesses(t *testing.T) {
	t.Parallel()
	for _, d := range testutil.Dialects() {
		t.Run(string(d), func(t *testing.T) {
			t.Parallel()
			env := apitest.Start(t, d, func(c *config.Config) { c.AuthAttemptsPerAddress = 1000; manySessions(c) })
			ctx := context.Background()
			users := map[string]apitest.User{}
			for _, login := range []string{"alice", "bob"} {
				users[login] = env.NewUser(login)
				if err := env.App.Accounts.SetPassword(ctx, login, "correct horse "+login); err != nil {
					t.Fatal(err)
				}
			}
			alice := users["alice"]
			window := attemptWindow()
			statuses := countAnswers(150, func(i int) int {
				b := &browser{t: t, base: env.URL}
				r, body := b.do("POST", "/sign-in", url.Values{"login": {"alice"}, "secret": {fmt.Sprintf("guess number %d", i)}}, nil)
				if r.StatusCode == 429 && !strings.Contains(body, "Too many failed sign-ins") {
					t.Errorf("guess %d: 429 without the lock-out's message", i)
				}
				return r.StatusCode
			})
			if window != attemptWindow() {
				t.Skip("the guesses crossed a 15-minute boundary: the limits' counts started over")
			}
			if statuses[401] > 10 || statuses[401]+statuses[429] != 150 {
				t.Fatalf("150 parallel wrong guesses, limit 10: answers %v; want at most 10 checked (401), the rest refused unchecked (429)", statuses)
			}
			if statuses[401] == 10 {
				if r := (&browser{t: t, base: env.URL}).signIn("alice", "correct horse alice", "/"); r.StatusCode != 429 && window == attemptWindow() {
					t.Errorf("the right password after 10 failures: %d, want 429 (locked out, not checked)", r.StatusCode)
				}
			}
			// Her API key is not locked with her password: a stranger's
			// guesses cannot keep her out of the console.
			if r := (&browser{t: t, base: env.URL}).signIn("alice", alice.Key, "/"); r.StatusCode != 303 {
				t.Errorf("alice's API key after 150 password guesses at her login: %d, want 303 (signed in)", r.StatusCode)
			}

			b := &browser{t: t, base: env.URL}
			for round := range 4 { // 4 × 3 failures: past 10 unless each success clears them
				for i := range 3 {
					if r := b.signIn("bob", fmt.Sprintf("typo %d.%d", round, i), "/"); r.StatusCode != 401 {
						t.Fatalf("bob's typo %d in round %d: %d, want 401", i, round, r.StatusCode)
					}
				}
				if r := b.signIn("bob", "correct horse bob", "/"); r.StatusCode != 303 || b.cookie == nil {
					t.Fatalf("bob's right password after 3 typos (round %d): %d, want 303 and a session", round, r.StatusCode)
				}
			}
		})
	}
}

// TestSubmissionAuthParallelGuesses: SMTP AUTH takes API keys, which
// cannot be guessed, so guesses are counted per client address only: 60
// wrong keys at once from one address are checked at most the address's
// limit (535), the rest refused unchecked (454); the login they named is
// not locked (its owner's right key still works, from another address);
// a client that mistypes its key a few times and then gets it right is let in.
func TestSubmissionAuthParallelGuesses(t *testing.T) {
	t.Parallel()
	for _, d := range testutil.Dialects() {
		t.Run(string(d), func(t *testing.T) {
			t.Parallel()
			e := startSubmission(t, d, func(c *config.Config) { c.AuthAttemptsPerAddress = 10; manySessions(c) })
			alice, bob := e.user, e.NewUser("bob")
			window := attemptWindow()
			codes := countAnswers(60, func(i int) int { return authFrom(e, "127.0.0.1", alice.Login, fmt.Sprintf("pl_guess%d", i)) })
			if window != attemptWindow() {
				t.Skip("the guesses crossed a 15-minute boundary: the limits' counts started over")
			}
			if codes[535] > 10 || codes[535]+codes[454] != 60 {
				t.Fatalf("60 parallel wrong keys from one address, limit 10: replies %v; want at most 10 checked (535), the rest 454", codes)
			}
			if code := authFrom(e, "127.0.0.1", alice.Login, alice.Key); code != 454 && window == attemptWindow() {
				t.Errorf("alice's right key from the guessing address: %d, want 454 (the address is blocked, nothing checked)", code)
			}
			if code := authFrom(e, "127.0.0.2", alice.Login, alice.Key); code != 235 {
				t.Errorf("alice's right key from another address after a flood of guesses at her login: %d, want 235", code)
			}
			for round := range 3 {
				for i := range 3 {
					if code := authFrom(e, "127.0.0.3", "bob", fmt.Sprintf("pl_typo%d%d", round, i)); code != 535 {
						t.Fatalf("bob's typo %d in round %d: %d, want 535", i, round, code)
					}
				}
				if code := authFrom(e, "127.0.0.3", "bob", bob.Key); code != 235 {
					t.Fatalf("bob's right key after 3 typos (round %d): %d, want 235", round, code)
				}
			}
		})
	}
}

// authFrom connects from the loopback address src to the implicit-TLS
// submission listener and answers the reply code to AUTH PLAIN (235 when
// accepted, -1 when the connection failed).
func authFrom(e *sendEnv, src, login, key string) int {
	dialer := &net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(src)}}
	conn, err := tls.DialWithDialer(dialer, "tcp", e.App.Submission.Addr(true), &tls.Config{InsecureSkipVerify: true}) //nolint:gosec // the server's self-signed loopback certificate
	if err != nil {
		return -1
	}
	c, err := smtp.NewClient(conn, "127.0.0.1")
	if err != nil {
		conn.Close()
		return -1
	}
	defer c.Close()
	if err := c.Auth(smtp.PlainAuth("", login, key, "127.0.0.1")); err != nil {
		return replyCode(err)
	}
	return 235
}

// countAnswers runs try(0..n-1) all at once and counts the answers by code.
func countAnswers(n int, try func(i int) int) map[int]int {
	codes := map[int]int{}
	var mu sync.Mutex
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			code := try(i)
			mu.Lock()
			codes[code]++
			mu.Unlock()
		})
	}
	wg.Wait()
	return codes
}

// attemptWindow is the 15-minute window the attempt limits count in now: a
// lock-out ends with its window, so a test that crossed a boundary (CI ran
// across 01:15:00 once) cannot expect it to hold.
func attemptWindow() time.Time { return time.Now().Truncate(15 * time.Minute) }
