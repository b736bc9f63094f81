package app_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"mime/multipart"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/postline/postline/internal/apitest"
	"github.com/postline/postline/internal/config"
	"github.com/postline/postline/internal/store"
	"github.com/postline/postline/internal/validation"
)

// post sends body to path with auth; safe in any goroutine (no t.Fatal).
func post(url, auth, contentType string, body io.Reader) (int, []byte, error) {
	req, err := http.NewRequest("POST", url, body)
	if err != nil {
		return 0, nil, err
	}
	req.Header.Set("Authorization", auth)
	req.Header.Set("Content-Type", contentType)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0, nil, err
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(resp.Body)
	return resp.StatusCode, raw, err
}

// TestValidationJobUploadLeavesWritesFree: while one account's 200,000-line
// list is being stored, another account's sends are accepted within 1 s
// each (the list was stored in one transaction, which on SQLite held the
// only writer for seconds: ~20 s for a million lines).
func TestValidationJobUploadLeavesWritesFree(t *testing.T) {
	t.Parallel()
	forEachDialect(t, func(t *testing.T, d store.Dialect) {
		env := apitest.Start(t, d, func(c *config.Config) { c.RateValidationPerHour, c.RateDomainPerMinute = 1, 100000 })
		alice, bob := env.NewUser("alice"), env.NewUser("bob")
		env.NewDomain(bob, "bob.example")
		emails := make([]string, 200_000)
		for i := range emails {
			emails[i] = fmt.Sprintf("user%d@acme-mail.com", i)
		}
		list, _ := json.Marshal(map[string]any{"emails": emails})
		var sendBody bytes.Buffer
		mw := multipart.NewWriter(&sendBody)
		for _, f := range [][2]string{{"from", "news@bob.example"}, {"to", "r@rcpt.example"}, {"subject", "hi"}, {"text", "hello"}} {
			mw.WriteField(f[0], f[1])
		}
		mw.Close()

		type upload struct {
			status int
			body   []byte
			err    error
			took   time.Duration
		}
		done := make(chan upload, 1)
		start := time.Now()
		go func() {
			st, body, err := post(env.URL+"/api/email/validate/jobs", alice.Auth(), "application/json", bytes.NewReader(list))
			done <- upload{st, body, err, time.Since(start)}
		}()
		var slowest time.Duration
		sends := 0
		var up upload
	loop:
		for deadline := time.Now().Add(2 * time.Minute); time.Now().Before(deadline); {
			t0 := time.Now()
			st, body, err := post(env.URL+"/api/domains/bob.example/message", bob.Auth(), mw.FormDataContentType(), bytes.NewReader(sendBody.Bytes()))
			if err != nil || st != 202 {
				t.Fatalf("bob's send during alice's upload: %d %s %v", st, body, err)
			}
			slowest, sends = max(slowest, time.Since(t0)), sends+1
			select {
			case up = <-done:
				break loop
			case <-time.After(20 * time.Millisecond):
			}
		}
		if up.err != nil || up.status != 202 {
			t.Fatalf("alice's upload of 200,000 lines: %d %.300s %v", up.status, up.body, up.err)
		}
		t.Logf("%s: upload %v; %d sends meanwhile, the slowest %v", d, up.took, sends, slowest)
		if sends < 5 {
			t.Fatalf("only %d sends while the upload ran (%v): the test did not overlap them", sends, up.took)
		}
		if slowest > time.Second {
			t.Errorf("the slowest of bob's %d sends during alice's upload took %v, want under 1 s", sends, slowest)
		}
		var job map[string]any
		json.Unmarshal(up.body, &job)
		if data, _ := job["data"].(map[string]any); data["total"] != 200_000.0 || data["status"] == validation.JobLoading {
			t.Errorf("the job: %v", data)
		}
	})
}

// TestValidationJobsPerAccount: an account has at most 3 unfinished jobs
// (the default); the 4th is a 429 naming the limit, in the API and in the
// console, even when ten are sent at once; another account is not held
// back, and a cancelled job frees its place.
func TestValidationJobsPerAccount(t *testing.T) {
	t.Parallel()
	forEachDialect(t, func(t *testing.T, d store.Dialect) {
		// A budget of one address an hour keeps every job unfinished.
		env := apitest.Start(t, d, func(c *config.Config) { c.RateValidationPerHour, c.RateDomainPerMinute = 1, 100000 })
		alice, bob := env.NewUser("alice"), env.NewUser("bob")
		body := map[string]any{"emails": []string{"a@acme-mail.com", "b@acme-mail.com"}}
		codes := make(chan int, 10)
		raw, _ := json.Marshal(body)
		var wg sync.WaitGroup
		for range 10 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				st, _, err := post(env.URL+"/api/email/validate/jobs", alice.Auth(), "application/json", bytes.NewReader(raw))
				if err != nil {
					t.Error(err)
				}
				codes <- st
			}()
		}
		wg.Wait()
		close(codes)
		count := map[int]int{}
		for c := range codes {
			count[c]++
		}
		if count[202] != 3 || count[429] != 7 {
			t.Fatalf("ten uploads at once with a limit of 3: %v, want 3 × 202 and 7 × 429", count)
		}
		resp := env.Do(apitest.Request{Method: "POST", Path: "/api/email/validate/jobs", Auth: alice.Auth(), Body: body})
		if resp.StatusCode != 429 || !strings.Contains(fmt.Sprint(resp.JSON["message"]), "at most 3 unfinished list-cleaning jobs") ||
			!strings.Contains(fmt.Sprint(resp.JSON["message"]), "validation-jobs-per-account") {
			t.Errorf("a 4th job: %d %s, want 429 naming the limit", resp.StatusCode, resp.Body)
		}
		if resp := env.Do(apitest.Request{Method: "POST", Path: "/api/email/validate/jobs", Auth: bob.Auth(), Body: body}); resp.StatusCode != 202 {
			t.Errorf("bob's first job while alice is at her limit: %d %s", resp.StatusCode, resp.Body)
		}

		// The console says the same.
		b := &browser{t: t, base: env.URL}
		b.signIn("alice", alice.Key, "/")
		_, page := b.do("GET", "/validation", nil, nil)
		form, ct := multipartForm(t, csrfRE.FindStringSubmatch(page)[1], "file", "list.txt", "x@acme-mail.com\n")
		req, _ := http.NewRequest("POST", env.URL+"/validation/jobs", bytes.NewReader(form))
		req.Header.Set("Content-Type", ct)
		req.AddCookie(b.cookie)
		r, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		raw, _ = io.ReadAll(r.Body)
		r.Body.Close()
		if r.StatusCode != 429 || !strings.Contains(string(raw), "at most 3 unfinished list-cleaning jobs") {
			t.Errorf("a 4th job in the console: %d\n%s", r.StatusCode, raw)
		}

		// Cancelling one makes room for one.
		list := env.Do(apitest.Request{Method: "GET", Path: "/api/email/validate/jobs", Auth: alice.Auth()})
		jobs := list.JSON["data"].([]any)
		if len(jobs) != 3 {
			t.Fatalf("alice's jobs: %d, want 3", len(jobs))
		}
		id := jobs[0].(map[string]any)["id"].(float64)
		env.Do(apitest.Request{Method: "DELETE", Path: fmt.Sprintf("/api/email/validate/jobs/%d", int(id)), Auth: alice.Auth()})
		if resp := env.Do(apitest.Request{Method: "POST", Path: "/api/email/validate/jobs", Auth: alice.Auth(), Body: body}); resp.StatusCode != 202 {
			t.Errorf("after cancelling one: %d %s", resp.StatusCode, resp.Body)
		}
	})
}

// TestValidationJobUploadBounds: a list of more than a million lines is a
// 422 naming the field, and a body past 64 MiB a 413 naming the limit, in
// the API and in the console; nothing is queued.
func TestValidationJobUploadBounds(t *testing.T) {
	t.Parallel()
	env := apitest.Start(t, store.SQLite, func(c *config.Config) { c.RateDomainPerMinute = 100000 })
	alice := env.NewUser("alice")
	lines := strings.Repeat("a@b.co\n", validation.MaxJobLines+1)
	if resp := uploadList(t, env, alice, lines); resp.StatusCode != 422 ||
		!strings.Contains(fmt.Sprint(resp.JSON["errors"]), "at most 1000000 addresses") {
		t.Errorf("1,000,001 lines: %d %.300s, want 422 naming the limit", resp.StatusCode, resp.Body)
	}
	// 65 MiB of blank lines: nothing kept in memory, only the bytes counted.
	tooBig := func(csrf string) (io.Reader, string) {
		pr, pw := io.Pipe()
		mw := multipart.NewWriter(pw)
		go func() {
			if csrf != "" {
				mw.WriteField("csrf", csrf)
			}
			fw, _ := mw.CreateFormFile("file", "list.txt")
			blank := bytes.Repeat([]byte("\n"), 1<<20)
			for range 65 {
				if _, err := fw.Write(blank); err != nil {
					pw.CloseWithError(err)
					return
				}
			}
			mw.Close()
			pw.Close()
		}()
		return pr, mw.FormDataContentType()
	}
	body, ct := tooBig("")
	st, raw, err := post(env.URL+"/api/email/validate/jobs", alice.Auth(), ct, body)
	if err != nil || st != 413 || !strings.Contains(string(raw), "limit of 67108864 bytes") {
		t.Errorf("a 65 MiB upload: %d %.300s %v, want 413 naming the limit", st, raw, err)
	}
	b := &browser{t: t, base: env.URL}
	b.signIn("alice", alice.Key, "/")
	_, page := b.do("GET", "/validation", nil, nil)
	body, ct = tooBig(csrfRE.FindStringSubmatch(page)[1])
	req, _ := http.NewRequest("POST", env.URL+"/validation/jobs", body)
	req.Header.Set("Content-Type", ct)
	req.AddCookie(b.cookie)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("a 65 MiB upload in the console: %v", err)
	}
	answer, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 413 || !strings.Contains(string(answer), "64 MiB") {
		t.Errorf("a 65 MiB upload in the console: %d, want 413 naming the limit", resp.StatusCode)
	}
	if list := env.Do(apitest.Request{Method: "GET", Path: "/api/email/validate/jobs", Auth: alice.Auth()}); len(list.JSON["data"].([]any)) != 0 {
		t.Errorf("jobs after refused uploads: %s", list.Body)
	}
}
