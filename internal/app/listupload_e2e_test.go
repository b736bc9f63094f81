package app_test

import (
	"bytes"
	"encoding/csv"
	"io"
	"net/http"
	"strconv"
	"strings"
	"testing"

	"github.com/postline/postline/internal/apitest"
	"github.com/postline/postline/internal/config"
	"github.com/postline/postline/internal/store"
)

// upload posts a file as the console's list form does and returns the
// answer's status and Location.
func (b *browser) upload(path, csrf, filename, content string) (int, string) {
	b.t.Helper()
	body, ct := multipartForm(b.t, csrf, "file", filename, content)
	req, _ := http.NewRequest("POST", b.base+path, bytes.NewReader(body))
	req.Header.Set("Content-Type", ct)
	req.AddCookie(b.cookie)
	resp, err := (&http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}).Do(req)
	if err != nil {
		b.t.Fatal(err)
	}
	resp.Body.Close()
	return resp.StatusCode, resp.Header.Get("Location")
}

// A list uploaded in the console (issue 32, defect 6): a text file is read
// as lines, quoted local parts kept whole; a CSV with a header keeps its
// other columns in the results; the console's results file is the API's,
// column for column.
func TestListUploadKeepsAddressesAndColumns(t *testing.T) {
	t.Parallel()
	env := apitest.Start(t, store.SQLite, func(c *config.Config) { c.RateValidationPerHour = 100000 })
	env.DNS.AddMX("acme-mail.com", 10, "mx.acme-mail.com")
	alice := env.NewUser("alice")
	b := &browser{t: t, base: env.URL}
	b.signIn("alice", alice.Key, "/")
	_, page := b.do("GET", "/validation", nil, nil)
	csrf := csrfRE.FindStringSubmatch(page)[1]

	results := func(file, content string) (console, api []byte) {
		t.Helper()
		status, loc := b.upload("/validation/jobs", csrf, file, content)
		id, err := strconv.Atoi(strings.TrimPrefix(loc, "/validation/jobs/"))
		if status != 303 || err != nil {
			t.Fatalf("upload %s: %d %q", file, status, loc)
		}
		waitJob(t, env, alice, float64(id), "done")
		_, text := b.do("GET", loc+"/results.csv", nil, nil)
		resp := env.Do(apitest.Request{Method: "GET", Path: "/api/email/validate/jobs/" + strconv.Itoa(id) + "/results", Auth: alice.Auth()})
		return []byte(text), resp.Body
	}
	rows := func(name string, raw []byte) [][]string {
		t.Helper()
		recs, err := csv.NewReader(bytes.NewReader(raw)).ReadAll()
		if err != nil {
			t.Fatalf("%s: %v\n%s", name, err, raw)
		}
		return recs
	}
	const resultHeader = "email,status,reason,error,warnings,spamtrap_score,suggestion,deliverability,deliverability_reasons"

	console, api := results("list.txt", "\"john doe\"@acme-mail.com\n\nann@acme-mail.com\n")
	if !bytes.Equal(console, api) {
		t.Errorf("the console's results differ from the API's:\n%s\nAPI:\n%s", console, api)
	}
	got := rows("lines", console)
	if strings.Join(got[0], ",") != resultHeader || len(got) != 3 || got[1][0] != `"john doe"@acme-mail.com` || got[1][1] != "valid" ||
		got[2][0] != "ann@acme-mail.com" {
		t.Errorf("results of a list of lines: %q", got)
	}

	console, api = results("list.csv", "Name,Email,Plan\n\"Doe, John\",\"\"\"john doe\"\"@acme-mail.com\",gold\nAnn,ann@acme-mail.com,\n")
	if !bytes.Equal(console, api) {
		t.Errorf("the console's results differ from the API's:\n%s\nAPI:\n%s", console, api)
	}
	got = rows("CSV", console)
	if strings.Join(got[0], ",") != resultHeader+",Name,Plan" || len(got) != 3 ||
		got[1][0] != `"john doe"@acme-mail.com` || got[1][9] != "Doe, John" || got[1][10] != "gold" ||
		got[2][0] != "ann@acme-mail.com" || got[2][9] != "Ann" || got[2][10] != "" {
		t.Errorf("results of a CSV: %q", got)
	}
	resp := env.Do(apitest.Request{Method: "GET", Path: "/api/email/validate/jobs", Auth: alice.Auth()})
	id := strconv.Itoa(int(resp.JSON["data"].([]any)[0].(map[string]any)["id"].(float64)))
	req, _ := http.NewRequest("GET", env.URL+"/api/email/validate/jobs/"+id+"/results", nil)
	req.Header.Set("Authorization", alice.Auth())
	req.Header.Set("Accept", "application/x-ndjson")
	r, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	lines, _ := io.ReadAll(r.Body)
	r.Body.Close()
	if first := strings.SplitN(string(lines), "\n", 2)[0]; !strings.Contains(first, `"columns":{"Name":"Doe, John","Plan":"gold"}`) ||
		!strings.Contains(first, `"status":"valid"`) {
		t.Errorf("the JSON line of a CSV's line: %s", first)
	}
}
