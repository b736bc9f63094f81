package app_test

import (
	"context"
	"crypto/tls"
	"fmt"
	"net/smtp"
	"net/url"
	"strings"
	"sync"
	"testing"

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
			for _, login := range []string{"alice", "bob"} {
				env.NewUser(login)
				if err := env.App.Accounts.SetPassword(ctx, login, "correct horse "+login); err != nil {
					t.Fatal(err)
				}
			}
			statuses := countAnswers(150, func(i int) int {
				b := &browser{t: t, base: env.URL}
				r, body := b.do("POST", "/sign-in", url.Values{"login": {"alice"}, "secret": {fmt.Sprintf("guess number %d", i)}}, nil)
				if r.StatusCode == 429 && !strings.Contains(body, "Too many failed sign-ins") {
					t.Errorf("guess %d: 429 without the lock-out's message", i)
				}
				return r.StatusCode
			})
			if statuses[401] > 10 || statuses[401]+statuses[429] != 150 {
				t.Fatalf("150 parallel wrong guesses, limit 10: answers %v; want at most 10 checked (401), the rest refused unchecked (429)", statuses)
			}
			if statuses[401] == 10 {
				if r := (&browser{t: t, base: env.URL}).signIn("alice", "correct horse alice", "/"); r.StatusCode != 429 {
					t.Errorf("the right password after 10 failures: %d, want 429 (locked out, not checked)", r.StatusCode)
				}
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

// TestSubmissionAuthParallelGuesses: the same for SMTP AUTH: 60 wrong keys
// at once for one login are checked at most 10 times (535), the rest
// refused unchecked (454); a client that mistypes its key a few times and
// then gets it right, again and again, is never locked out.
func TestSubmissionAuthParallelGuesses(t *testing.T) {
	t.Parallel()
	for _, d := range testutil.Dialects() {
		t.Run(string(d), func(t *testing.T) {
			t.Parallel()
			e := startSubmission(t, d, func(c *config.Config) { c.AuthAttemptsPerAddress = 1000; manySessions(c) })
			bob := e.NewUser("bob")
			codes := countAnswers(60, func(i int) int { return authOnce(e, "alice", fmt.Sprintf("pl_guess%d", i)) })
			if codes[535] > 10 || codes[535]+codes[454] != 60 {
				t.Fatalf("60 parallel wrong keys, limit 10: replies %v; want at most 10 checked (535), the rest 454", codes)
			}
			for round := range 4 {
				for i := range 3 {
					if code := authOnce(e, "bob", fmt.Sprintf("pl_typo%d%d", round, i)); code != 535 {
						t.Fatalf("bob's typo %d in round %d: %d, want 535", i, round, code)
					}
				}
				if code := authOnce(e, "bob", bob.Key); code != 235 {
					t.Fatalf("bob's right key after 3 typos (round %d): %d, want 235", round, code)
				}
			}
		})
	}
}

// authOnce connects to the implicit-TLS submission listener and answers
// the reply code to AUTH PLAIN (235 when accepted, -1 when the connection
// failed).
func authOnce(e *sendEnv, login, key string) int {
	conn, err := tls.Dial("tcp", e.App.Submission.Addr(true), &tls.Config{InsecureSkipVerify: true}) //nolint:gosec // the server's self-signed loopback certificate
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
