package app_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/csv"
	"encoding/json"
	"fmt"
	"io"
	"mime/multipart"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/postline/postline/internal/apitest"
	"github.com/postline/postline/internal/app"
	"github.com/postline/postline/internal/config"
	"github.com/postline/postline/internal/store"
)

// listCSV is a list of n addresses with a header row: every third one is
// not an address, every fifth a role account.
func listCSV(n int) (string, []string) {
	var b strings.Builder
	b.WriteString("email,name\n")
	var want []string
	for i := 0; i < n; i++ {
		e := fmt.Sprintf("user%d@acme-mail.com", i)
		switch {
		case i%3 == 0:
			e = fmt.Sprintf("not-an-address-%d", i)
		case i%5 == 0:
			e = fmt.Sprintf("info%d@acme-mail.com", i)
			e = "info@acme-mail.com"
		}
		want = append(want, e)
		fmt.Fprintf(&b, "%s,User %d\n", e, i)
	}
	return b.String(), want
}

func uploadList(t *testing.T, env *apitest.Env, u apitest.User, body string) *apitest.Response {
	t.Helper()
	var buf bytes.Buffer
	mw := multipart.NewWriter(&buf)
	fw, _ := mw.CreateFormFile("file", "list.csv")
	io.WriteString(fw, body)
	mw.Close()
	return env.Do(apitest.Request{Method: "POST", Path: "/api/email/validate/jobs", Auth: u.Auth(), Body: buf.Bytes(),
		Header: http.Header{"Content-Type": {mw.FormDataContentType()}}})
}

func waitJob(t *testing.T, env *apitest.Env, u apitest.User, id float64, status string) map[string]any {
	t.Helper()
	var job map[string]any
	deadline := time.Now().Add(60 * time.Second)
	for {
		resp := env.Do(apitest.Request{Method: "GET", Path: fmt.Sprintf("/api/email/validate/jobs/%d", int(id)), Auth: u.Auth()})
		if resp.StatusCode != 200 {
			t.Fatalf("job %d: %d %s", int(id), resp.StatusCode, resp.Body)
		}
		job = resp.JSON["data"].(map[string]any)
		if job["status"] == status || time.Now().After(deadline) {
			return job
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// TestValidationJobs: a 1,000-line CSV upload runs in the background to
// done; its results come back in input order as CSV and as JSON lines
// with the right counts; another account's job is a 404; bad uploads are
// 422 naming the field; a job can be cancelled.
func TestValidationJobs(t *testing.T) {
	t.Parallel()
	forEachDialect(t, func(t *testing.T, d store.Dialect) {
		env := apitest.Start(t, d, func(c *config.Config) { c.RateValidationPerHour, c.RateDomainPerMinute = 100000, 100000 })
		env.DNS.AddMX("acme-mail.com", 10, "mx.acme-mail.com")
		env.DNS.AddA("mx.acme-mail.com", "192.0.2.10")
		alice, bob := env.NewUser("alice"), env.NewUser("bob")
		body, want := listCSV(1000)
		resp := uploadList(t, env, alice, body)
		if resp.StatusCode != 202 {
			t.Fatalf("upload: %d %s", resp.StatusCode, resp.Body)
		}
		id := resp.JSON["data"].(map[string]any)["id"].(float64)
		job := waitJob(t, env, alice, id, "done")
		counts := job["counts"].(map[string]any)
		if job["status"] != "done" || job["total"] != 1000.0 || job["done"] != 1000.0 ||
			counts["invalid"] != 334.0 || counts["valid"].(float64)+counts["risky"].(float64) != 666 || counts["risky"].(float64) < 1 {
			t.Fatalf("job: %v", job)
		}
		// CSV, in input order.
		req, _ := http.NewRequest("GET", env.URL+fmt.Sprintf("/api/email/validate/jobs/%d/results", int(id)), nil)
		req.Header.Set("Authorization", alice.Auth())
		r, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		rows, err := csv.NewReader(r.Body).ReadAll()
		r.Body.Close()
		if err != nil || len(rows) != 1001 || strings.Join(rows[0], ",") != "email,status,reason,error,warnings,spamtrap_score,suggestion,deliverability,deliverability_reasons,name" {
			t.Fatalf("CSV results: %d rows, %v", len(rows), err)
		}
		for i, row := range rows[1:] {
			if row[0] != want[i] || (i%3 == 0) != (row[1] == "invalid") || row[9] != fmt.Sprintf("User %d", i) {
				t.Fatalf("CSV row %d = %v, want %s (invalid %v)", i, row, want[i], i%3 == 0)
			}
		}
		// JSON lines.
		req.Header.Set("Accept", "application/x-ndjson")
		r, err = http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		sc := bufio.NewScanner(r.Body)
		n := 0
		for sc.Scan() {
			var line map[string]any
			if err := json.Unmarshal(sc.Bytes(), &line); err != nil || line["email"] != want[n] || line["status"] == nil {
				t.Fatalf("NDJSON line %d: %s", n, sc.Bytes())
			}
			n++
		}
		r.Body.Close()
		if n != 1000 || r.Header.Get("Content-Type") != "application/x-ndjson" {
			t.Fatalf("NDJSON: %d lines, %s", n, r.Header.Get("Content-Type"))
		}
		// Another account's job; bad input; cancel.
		for _, m := range []string{"GET", "DELETE"} {
			if resp := env.Do(apitest.Request{Method: m, Path: fmt.Sprintf("/api/email/validate/jobs/%d", int(id)), Auth: bob.Auth()}); resp.StatusCode != 404 {
				t.Errorf("bob %s alice's job: %d", m, resp.StatusCode)
			}
		}
		if resp := env.Do(apitest.Request{Method: "GET", Path: fmt.Sprintf("/api/email/validate/jobs/%d/results", int(id)), Auth: bob.Auth()}); resp.StatusCode != 404 {
			t.Errorf("bob reads alice's results: %d", resp.StatusCode)
		}
		if resp := env.Do(apitest.Request{Method: "POST", Path: "/api/email/validate/jobs", Auth: alice.Auth(), Body: map[string]any{"emails": []string{}}}); resp.StatusCode != 422 || resp.JSON["errors"].(map[string]any)["emails"] == nil {
			t.Errorf("an empty list: %d %s", resp.StatusCode, resp.Body)
		}
		if resp := uploadList(t, env, alice, "email\n"); resp.StatusCode != 422 {
			t.Errorf("a file with only a header: %d %s", resp.StatusCode, resp.Body)
		}
		big := env.Do(apitest.Request{Method: "POST", Path: "/api/email/validate/jobs", Auth: alice.Auth(),
			Body: map[string]any{"emails": []string{strings.Repeat("a", 2000) + "@x.example"}}})
		if big.StatusCode != 422 {
			t.Errorf("a 2000-byte address: %d", big.StatusCode)
		}
		resp = env.Do(apitest.Request{Method: "POST", Path: "/api/email/validate/jobs", Auth: alice.Auth(), Body: map[string]any{"emails": []string{"a@acme-mail.com"}}})
		cid := resp.JSON["data"].(map[string]any)["id"].(float64)
		resp = env.Do(apitest.Request{Method: "DELETE", Path: fmt.Sprintf("/api/email/validate/jobs/%d", int(cid)), Auth: alice.Auth()})
		if st := resp.JSON["data"].(map[string]any)["status"]; resp.StatusCode != 200 || (st != "cancelled" && st != "done") {
			t.Errorf("cancel: %d %s", resp.StatusCode, resp.Body)
		}
	})
}

// TestValidationJobResumesAndWaitsForBudget: a job stopped half-way (the
// server gone) goes on in a new server from where it stopped, without
// validating the finished lines again; with the hourly budget spent it
// waits, saying until when.
func TestValidationJobResumesAndWaitsForBudget(t *testing.T) {
	t.Parallel()
	env := apitest.Start(t, store.SQLite, func(c *config.Config) { c.RateValidationPerHour, c.RateDomainPerMinute = 30, 100000 })
	env.DNS.AddMX("acme-mail.com", 10, "mx.acme-mail.com")
	env.DNS.AddA("mx.acme-mail.com", "192.0.2.10")
	alice := env.NewUser("alice")
	emails := make([]string, 50)
	for i := range emails {
		emails[i] = fmt.Sprintf("u%d@acme-mail.com", i)
	}
	resp := env.Do(apitest.Request{Method: "POST", Path: "/api/email/validate/jobs", Auth: alice.Auth(), Body: map[string]any{"emails": emails}})
	id := resp.JSON["data"].(map[string]any)["id"].(float64)
	var job map[string]any
	deadline := time.Now().Add(30 * time.Second)
	for {
		job = waitJob(t, env, alice, id, "running")
		if job["waiting_until"] != nil || time.Now().After(deadline) {
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	if job["done"] != 30.0 || job["waiting_until"] == nil || job["status"] != "running" {
		t.Fatalf("with a budget of 30 an hour, 50 addresses: %v, want 30 done and waiting", job)
	}
	queries := env.DNS.Queries()

	// Another server on the same database, with a budget again.
	cfg := env.Config
	cfg.RateValidationPerHour = 1000
	other, err := app.Open(context.Background(), cfg, nil, app.Options{DKIMKeyBits: 1024})
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	if _, err := other.DB.Writer().ExecContext(context.Background(), `UPDATE validation_jobs SET waiting_until = NULL`); err != nil {
		t.Fatal(err) // as if the window had passed
	}
	for other.ValidationJobs.RunOnce(context.Background()) {
	}
	job = waitJob(t, env, alice, id, "done")
	if job["status"] != "done" || job["done"] != 50.0 {
		t.Fatalf("after the other server ran: %v", job)
	}
	if env.DNS.Queries() != queries {
		t.Logf("DNS queries %d → %d (the domain was cached, so none were needed)", queries, env.DNS.Queries())
	}
}
