package app_test

import (
	"fmt"
	"net/http"
	"net/url"
	"runtime"
	"strings"
	"testing"

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
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		auth := apitest.User{Login: "api", Key: key}.Auth()
		if strings.HasPrefix(path, "/api/") {
			auth = e.user.Auth()
		}
		r := e.Do(apitest.Request{Method: "GET", Path: path, Auth: auth})
		runtime.ReadMemStats(&after)
		if r.StatusCode != 200 {
			t.Fatalf("GET %s: %d %.300s", path, r.StatusCode, r.Body)
		}
		// The content is 20 to 40 MB of HTML and as much text; a page of
		// names and tags needs a few KB.
		if got := after.TotalAlloc - before.TotalAlloc; got > 8<<20 {
			t.Errorf("GET %s allocated %d MiB; want the list read without the versions' content", path, got>>20)
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
