package app_test

import (
	"archive/zip"
	"bytes"
	"compress/gzip"
	"fmt"
	"io"
	"math"
	"mime/multipart"
	"net/http"
	"net/url"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/postline/postline/internal/apitest"
	"github.com/postline/postline/internal/config"
	"github.com/postline/postline/internal/store"
	"github.com/postline/postline/internal/templates"
)

// mgForm sends a urlencoded Mailgun request.
func mgForm(e *apitest.Env, key, method, path string, form url.Values) *apitest.Response {
	r := apitest.Request{Method: method, Path: path, Auth: apitest.User{Login: "api", Key: key}.Auth()}
	if form != nil {
		r.Body, r.Header = form.Encode(), http.Header{"Content-Type": {"application/x-www-form-urlencoded"}}
	}
	return e.Do(r)
}

// TestMailgunTemplateListsReadNoContent: a template of 40 versions of
// 500 KB each (40 MB of HTML and as much derived text), and 20 templates
// of that size, are listed and paged without the server reading their
// content (20 requests at once for a page of one of 100 such versions took
// the server from 318 MB to 1.7 GB before, and a domain may have 500
// templates). Comments and descriptions, which lists do carry, are
// bounded, naming the limit.
func TestMailgunTemplateListsReadNoContent(t *testing.T) {
	t.Parallel()
	e := startSend(t, store.SQLite, false, func(c *config.Config) { c.RateDomainPerMinute = 100000 })
	key := e.user.Key
	base := "/v3/shop.example.com/templates"
	big := "<p>" + strings.Repeat("y", 500<<10) + "</p>"
	if r := mgForm(e.Env, key, "POST", base, url.Values{"name": {"fat"}, "template": {big}}); r.StatusCode != 200 {
		t.Fatalf("create: %d %.300s", r.StatusCode, r.Body)
	}
	for i := 2; i <= 40; i++ {
		r := mgForm(e.Env, key, "POST", base+"/fat/versions", url.Values{"tag": {fmt.Sprintf("v%d", i)}, "template": {big}})
		if r.StatusCode != 200 {
			t.Fatalf("version %d: %d %.300s", i, r.StatusCode, r.Body)
		}
	}
	for i := range 20 {
		if r := mgForm(e.Env, key, "POST", base, url.Values{"name": {fmt.Sprintf("fat%d", i)}, "template": {big}}); r.StatusCode != 200 {
			t.Fatalf("template %d: %d %.300s", i, r.StatusCode, r.Body)
		}
	}
	for _, path := range []string{base + "/fat/versions?limit=1", base + "?limit=1", "/api/domains/shop.example.com/templates"} {
		auth := apitest.User{Login: "api", Key: key}.Auth()
		if strings.HasPrefix(path, "/api/") {
			auth = e.user.Auth()
		}
		// The allocation counter is the process's: the parallel tests'
		// allocations land in it too (19 MiB once in CI). The least of
		// three requests is this request's own; reading the content would
		// make every one of them allocate tens of MB.
		least := uint64(math.MaxUint64)
		for range 3 {
			var before, after runtime.MemStats
			runtime.ReadMemStats(&before)
			r := e.Do(apitest.Request{Method: "GET", Path: path, Auth: auth})
			runtime.ReadMemStats(&after)
			if r.StatusCode != 200 {
				t.Fatalf("GET %s: %d %.300s", path, r.StatusCode, r.Body)
			}
			least = min(least, after.TotalAlloc-before.TotalAlloc)
		}
		// The content is 20 to 40 MB of HTML and as much text; a page of
		// names and tags needs a few KB.
		if least > 8<<20 {
			t.Errorf("GET %s allocated %d MiB (the least of three); want the list read without the versions' content", path, least>>20)
		}
	}

	comment := strings.Repeat("c", templates.MaxCommentBytes+1)
	description := strings.Repeat("d", templates.MaxDescriptionBytes+1)
	for _, c := range []struct {
		method, path string
		form         url.Values
		field        string
		limit        int
	}{
		{"POST", base, url.Values{"name": {"n1"}, "template": {"x"}, "comment": {comment}}, "comment", templates.MaxCommentBytes},
		{"POST", base, url.Values{"name": {"n2"}, "template": {"x"}, "description": {description}}, "description", templates.MaxDescriptionBytes},
		{"POST", base + "/fat/versions", url.Values{"tag": {"long"}, "template": {"x"}, "comment": {comment}}, "comment", templates.MaxCommentBytes},
		{"PUT", base + "/fat/versions/initial", url.Values{"comment": {comment}}, "comment", templates.MaxCommentBytes},
		{"PUT", base + "/fat", url.Values{"description": {description}}, "description", templates.MaxDescriptionBytes},
	} {
		r := mgForm(e.Env, key, c.method, c.path, c.form)
		msg := fmt.Sprint(r.JSON["message"])
		if r.StatusCode != 400 || !strings.HasPrefix(msg, c.field+": ") || !strings.Contains(msg, fmt.Sprint(c.limit)) {
			t.Errorf("%s %s with a %s past its limit: %d %.300s; want 400 naming the field and its limit", c.method, c.path, c.field, r.StatusCode, r.Body)
		}
	}
}

// TestTemplateTextNotStorable: a NUL byte or invalid UTF-8 in a template's
// content, subject, comment or description is a 400 (422 in Postline's
// API) naming the field, and a name or tag with them a 404, on both
// stores: PostgreSQL refuses such text, and each answered 500 there.
func TestTemplateTextNotStorable(t *testing.T) {
	t.Parallel()
	forEachDialect(t, func(t *testing.T, d store.Dialect) {
		e := startSend(t, d, false, nil)
		key := e.user.Key
		base := "/v3/shop.example.com/templates"
		if r := mgForm(e.Env, key, "POST", base, url.Values{"name": {"ok"}, "template": {"<p>ok</p>"}}); r.StatusCode != 200 {
			t.Fatalf("create: %d %s", r.StatusCode, r.Body)
		}
		for _, c := range []struct {
			method, path string
			form         url.Values
			status       int
			field        string // the message's start
		}{
			{"POST", base, url.Values{"name": {"n1"}, "template": {"a\x00b"}}, 400, "template: "},
			{"POST", base, url.Values{"name": {"n2"}, "template": {"a\xffb"}}, 400, "template: "},
			{"POST", base, url.Values{"name": {"n3"}, "template": {"x"}, "description": {"a\x00b"}}, 400, "description: "},
			{"POST", base, url.Values{"name": {"n4"}, "template": {"x"}, "comment": {"\xff"}}, 400, "comment: "},
			{"POST", base, url.Values{"name": {"n5"}, "template": {"x"}, "headers": {`{"Subject": "a\u0000"}`}}, 400, "headers: "},
			{"PUT", base + "/ok", url.Values{"description": {"\xff\x00"}}, 400, "description: "},
			{"POST", base + "/ok/versions", url.Values{"tag": {"t2"}, "template": {"x"}, "comment": {"\x00"}}, 400, "comment: "},
			{"PUT", base + "/ok/versions/initial", url.Values{"template": {"\x00"}}, 400, "template: "},
			{"GET", base + "/ok%00", nil, 404, ""},
			{"GET", base + "/ok%00/versions", nil, 404, ""},
			{"GET", base + "/ok/versions/a%00b", nil, 404, ""},
			{"GET", base + "/ok/versions/%FF", nil, 404, ""},
			{"PUT", base + "/ok/versions/%00", url.Values{"comment": {"c"}}, 404, ""},
			{"DELETE", base + "/ok/versions/%00", nil, 404, ""},
			{"POST", base + "/ok%00/versions", url.Values{"tag": {"t3"}, "template": {"x"}}, 404, ""},
			{"PUT", base + "/ok%FF", url.Values{"description": {"d"}}, 404, ""},
			{"DELETE", base + "/ok%00", nil, 404, ""},
		} {
			r := mgForm(e.Env, key, c.method, c.path, c.form)
			if r.StatusCode != c.status || !strings.HasPrefix(fmt.Sprint(r.JSON["message"]), c.field) {
				t.Errorf("%s %s %q: %d %s; want %d naming %q", c.method, c.path, c.form, r.StatusCode, r.Body, c.status, c.field)
			}
		}
		// A send naming such a template, or version, finds none.
		for _, form := range []url.Values{{"template": {"ok\x00"}}, {"template": {"ok"}, "t:version": {"\xff"}}} {
			form.Set("from", "news@shop.example.com")
			form.Set("to", "ann@rcpt.example.net")
			if r := mgForm(e.Env, key, "POST", "/v3/shop.example.com/messages", form); r.StatusCode >= 500 {
				t.Errorf("send with %q: %d %s", form, r.StatusCode, r.Body)
			}
		}

		// Postline's own API.
		native := "/api/domains/shop.example.com/templates"
		r := e.Do(apitest.Request{Method: "POST", Path: native, Auth: e.user.Auth(),
			Body: map[string]any{"name": "n6", "subject": "s", "text": "a\x00b", "html": "<p>\x00</p>"}})
		if errs, _ := r.JSON["errors"].(map[string]any); r.StatusCode != 422 || errs["text"] == nil || errs["html"] == nil {
			t.Errorf("native create with NUL: %d %s; want 422 naming text and html", r.StatusCode, r.Body)
		}
		for _, path := range []string{native + "/ok%00", native + "/%FF"} {
			if r := e.Do(apitest.Request{Method: "GET", Path: path, Auth: e.user.Auth()}); r.StatusCode != 404 {
				t.Errorf("GET %s: %d %s; want 404", path, r.StatusCode, r.Body)
			}
		}
	})
}

// TestBulkListTextNotStorable: a list_id, or a list line, that is not
// UTF-8 text or has a NUL is a 400 (422 in Postline's API) naming list_id
// or file and the line, and a gzip or zip upload (Mailgun takes them; the
// lines were read from the compressed bytes and queued as garbage) is a
// 400 naming file, on both stores: PostgreSQL answered 500 for each.
func TestBulkListTextNotStorable(t *testing.T) {
	t.Parallel()
	forEachDialect(t, func(t *testing.T, d store.Dialect) {
		e := apitest.Start(t, d, func(c *config.Config) { c.RateDomainPerMinute = 100000 })
		alice := e.NewUser("alice")
		auth := apitest.User{Login: "api", Key: alice.Key}.Auth()
		for _, id := range []string{"a%00b", "a%FFb", "a%0D%0Ab"} {
			if r := mgBulkUpload(t, e, alice.Key, id, "file", "ann@example.org\n"); r.StatusCode != 400 ||
				!strings.HasPrefix(fmt.Sprint(r.JSON["message"]), "list_id: ") {
				t.Errorf("POST list %s: %d %s; want 400 naming list_id", id, r.StatusCode, r.Body)
			}
			for _, method := range []string{"GET", "DELETE"} {
				for _, path := range []string{"/v4/address/validate/bulk/" + id, "/v4/address/validate/bulk/" + id + "/results.csv"} {
					if method == "DELETE" && strings.HasSuffix(path, ".csv") {
						continue
					}
					if r := e.Do(apitest.Request{Method: method, Path: path, Auth: auth}); r.StatusCode != 400 {
						t.Errorf("%s %s: %d %s; want 400 naming list_id", method, path, r.StatusCode, r.Body)
					}
				}
			}
		}
		var gz bytes.Buffer
		zw := gzip.NewWriter(&gz)
		zw.Write([]byte(strings.Repeat("ann@example.org\n", 1000)))
		zw.Close()
		var zb bytes.Buffer
		z := zip.NewWriter(&zb)
		f, _ := z.Create("list.csv")
		f.Write([]byte("ann@example.org\n"))
		z.Close()
		for name, c := range map[string]struct{ body, want string }{
			"a NUL":        {"ann@example.org\nb\x00b@example.org\n", "line 2"},
			"Latin-1":      {"email,name\nj\xe9r\xf4me@example.org,J\n", "line 2"},
			"a gzip file":  {gz.String(), "compressed"},
			"a zip file":   {zb.String(), "compressed"},
			"Latin-1 name": {"email,name\nann@example.org,J\xe9r\xf4me\n", ""}, // only the first column is kept
		} {
			r := mgBulkUpload(t, e, alice.Key, "list"+strings.ReplaceAll(name, " ", ""), "file", c.body)
			native := uploadList(t, e, alice, c.body)
			if c.want == "" {
				if r.StatusCode != 202 || native.StatusCode != 202 {
					t.Errorf("%s: %d %s / %d %s; want both queued", name, r.StatusCode, r.Body, native.StatusCode, native.Body)
				}
				continue
			}
			if msg := fmt.Sprint(r.JSON["message"]); r.StatusCode != 400 || !strings.HasPrefix(msg, "file: ") || !strings.Contains(msg, c.want) {
				t.Errorf("Mailgun upload of %s: %d %s; want 400 naming file and %q", name, r.StatusCode, r.Body, c.want)
			}
			if errs := fmt.Sprint(native.JSON["errors"]); native.StatusCode != 422 || !strings.Contains(errs, "file:") || !strings.Contains(errs, c.want) {
				t.Errorf("upload of %s: %d %s; want 422 naming file and %q", name, native.StatusCode, native.Body, c.want)
			}
		}
		r := e.Do(apitest.Request{Method: "POST", Path: "/api/email/validate/jobs", Auth: alice.Auth(),
			Body: map[string]any{"emails": []string{"ann@example.org", "b\x00b@example.org"}}})
		if errs := fmt.Sprint(r.JSON["errors"]); r.StatusCode != 422 || !strings.Contains(errs, "emails.1:") {
			t.Errorf("a JSON list with a NUL: %d %s; want 422 naming emails.1", r.StatusCode, r.Body)
		}
	})
}

// TestListUploadsReadAtOncePerAccount: a list is read whole before the
// limit of unfinished jobs is checked, so one account's concurrent uploads
// each held their list in memory (8 uploads of 63 MB at once, all refused
// in the end, took the server from 39 MB to 945 MB). An account's uploads
// being read count against --validation-jobs-per-account: while three of
// alice's are read, a fourth, Mailgun's or Postline's, is a 429 naming the
// setting before its body is read; bob's is not held back; once they end,
// alice uploads again.
func TestListUploadsReadAtOncePerAccount(t *testing.T) {
	t.Parallel()
	e := apitest.Start(t, store.SQLite, func(c *config.Config) { c.RateDomainPerMinute = 100000 })
	alice, bob := e.NewUser("alice"), e.NewUser("bob")
	mgAuth := apitest.User{Login: "api", Key: alice.Key}.Auth()
	// upload starts a list whose body stops after its first line until
	// finish is closed; the answer comes on the channel.
	type answer struct {
		status int
		body   []byte
		err    error
	}
	finish := make(chan struct{})
	upload := func(path, auth string, block bool) chan answer {
		pr, pw := io.Pipe()
		mw := multipart.NewWriter(pw)
		go func() {
			fw, _ := mw.CreateFormFile("file", "list.csv")
			io.WriteString(fw, "ann@example.org\n")
			if block {
				<-finish
			}
			io.WriteString(fw, "ben@example.org\n")
			mw.Close()
			pw.Close()
		}()
		out := make(chan answer, 1)
		go func() {
			st, body, err := post(e.URL+path, auth, mw.FormDataContentType(), pr)
			out <- answer{st, body, err}
		}()
		return out
	}
	held := []chan answer{upload("/v4/address/validate/bulk/one", mgAuth, true), upload("/v4/address/validate/bulk/two", mgAuth, true),
		upload("/api/email/validate/jobs", alice.Auth(), true)}
	time.Sleep(300 * time.Millisecond) // the three are being read
	for _, c := range []struct{ path, auth string }{{"/v4/address/validate/bulk/four", mgAuth}, {"/api/email/validate/jobs", alice.Auth()}} {
		select {
		case a := <-upload(c.path, c.auth, true):
			if a.status != 429 || !strings.Contains(string(a.body), "validation-jobs-per-account") {
				t.Errorf("a fourth upload to %s while three are read: %d %s %v; want 429 naming the setting", c.path, a.status, a.body, a.err)
			}
		case <-time.After(5 * time.Second):
			t.Errorf("a fourth upload to %s waited to be read; want a 429 at once", c.path)
		}
	}
	if a := <-upload("/api/email/validate/jobs", bob.Auth(), false); a.status != 202 {
		t.Errorf("bob's upload meanwhile: %d %s %v", a.status, a.body, a.err)
	}
	close(finish)
	for i, c := range held {
		if a := <-c; a.status != 202 {
			t.Errorf("held upload %d: %d %s %v", i, a.status, a.body, a.err)
		}
	}
	r := e.Do(apitest.Request{Method: "DELETE", Path: "/v4/address/validate/bulk/one", Auth: mgAuth})
	if r.StatusCode != 200 {
		t.Fatalf("cancel one: %d %s", r.StatusCode, r.Body)
	}
	if a := <-upload("/v4/address/validate/bulk/five", mgAuth, false); a.status != 202 {
		t.Errorf("an upload once the others were read and one cancelled: %d %s %v", a.status, a.body, a.err)
	}
}

// TestMailgunTemplateTokensBounded: a 500 KB template of {{a}} parsed to
// ~25 MB a part, and every version created was kept compiled (ten took
// the server from 435 MB to 1.3 GB); a part of more than 50,000 tokens is
// a 400 naming the template and the limit, at create and as a version.
func TestMailgunTemplateTokensBounded(t *testing.T) {
	t.Parallel()
	e := startSend(t, store.SQLite, false, nil)
	base := "/v3/shop.example.com/templates"
	bomb := strings.Repeat("{{a}}", 60_000) // 300 KB, under the body limit urlencoded
	for _, c := range []struct {
		path string
		form url.Values
	}{
		{base, url.Values{"name": {"bomb"}, "template": {bomb}}},
		{base, url.Values{"name": {"ok"}, "template": {"<p>{{a}}</p>"}}},
		{base + "/ok/versions", url.Values{"tag": {"bomb"}, "template": {bomb}}},
	} {
		r := mgForm(e.Env, e.user.Key, "POST", c.path, c.form)
		msg := fmt.Sprint(r.JSON["message"])
		if c.form.Get("template") != bomb {
			if r.StatusCode != 200 {
				t.Fatalf("POST %s: %d %s", c.path, r.StatusCode, r.Body)
			}
			continue
		}
		if r.StatusCode != 400 || !strings.HasPrefix(msg, "template: ") || !strings.Contains(msg, fmt.Sprintf("more than %d Handlebars tokens", templates.MaxTokens)) {
			t.Errorf("POST %s with %d tokens: %d %.300s; want 400 naming template and the limit", c.path, 3*60_000, r.StatusCode, r.Body)
		}
	}
}

// TestMailgunBodiesPastTheirLimit: a webhook or template body past its
// limit is a 413 naming the limit, as the OpenAPI document says (it did
// not list 413 for these routes).
func TestMailgunBodiesPastTheirLimit(t *testing.T) {
	t.Parallel()
	e := startSend(t, store.SQLite, false, nil)
	big := strings.Repeat("a", 2<<20)
	for _, c := range []struct{ method, path string }{
		{"POST", "/v3/domains/shop.example.com/webhooks"}, {"PUT", "/v3/domains/shop.example.com/webhooks/delivered"},
		{"POST", "/v3/shop.example.com/templates"}, {"PUT", "/v3/shop.example.com/templates/t"},
		{"POST", "/v3/shop.example.com/templates/t/versions"}, {"PUT", "/v3/shop.example.com/templates/t/versions/v"},
	} {
		r := mgForm(e.Env, e.user.Key, c.method, c.path, url.Values{"url": {big}})
		if msg := fmt.Sprint(r.JSON["message"]); r.StatusCode != 413 || !strings.HasPrefix(msg, "body: Request body exceeds the limit of ") {
			t.Errorf("%s %s with 2 MiB: %d %.200s; want 413 naming the limit", c.method, c.path, r.StatusCode, r.Body)
		}
	}
}
