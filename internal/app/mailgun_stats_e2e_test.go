package app_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/mail"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/postline/postline/internal/account"
	"github.com/postline/postline/internal/apitest"
	"github.com/postline/postline/internal/event"
	"github.com/postline/postline/internal/smtptest"
	"github.com/postline/postline/internal/store"
)

// mgStats is the stats answer, decoded.
type mgStats struct {
	Start, End, Resolution, Tag, Description string
	Stats                                    []map[string]json.RawMessage
	body                                     string // as answered, for messages
}

// sum adds up one counter (path such as "failed.permanent.bounce") over
// every bucket; a bucket without the event is an error.
func (s mgStats) sum(t *testing.T, path string) int64 {
	t.Helper()
	ev, rest, _ := strings.Cut(path, ".")
	var n int64
	for _, b := range s.Stats {
		raw, ok := b[ev]
		if !ok {
			t.Fatalf("a bucket has no %s: %v", ev, b)
		}
		var v any
		json.Unmarshal(raw, &v)
		for _, k := range strings.Split(rest, ".") {
			v = v.(map[string]any)[k]
		}
		n += int64(v.(float64))
	}
	return n
}

// TestMailgunStatsAndTags: after real sends through /v3/ (tagged; one
// refused with 550, one deferred once with 451, one to a suppressed
// address), the stats routes answer Mailgun's buckets with the counts a
// user checks, for the domain, the account (its own domains only) and a
// tag; tags list, page, change and delete; bad input is a 400 naming the
// parameter and the limit; another account's domain a JSON 404; keys
// need log:read to read and send to change tags.
func TestMailgunStatsAndTags(t *testing.T) {
	t.Parallel()
	forEachDialect(t, func(t *testing.T, d store.Dialect) {
		e := startSend(t, d, false, nil)
		ctx := context.Background()
		bob := e.NewUser("bob")
		e.NewDomain(bob, "bob.example.org")
		e.sink.Script("gone@rcpt.example.net", smtptest.Reply{Code: 550, Enhanced: [3]int{5, 1, 1}, Message: "no such user"})
		e.sink.Script("later@rcpt.example.net", smtptest.Reply{Code: 451, Message: "try later"})
		if _, err := e.App.Suppressions.AddBounce(ctx, e.dom.ID, "blocked@rcpt.example.net", "dsn:5.1.1"); err != nil {
			t.Fatal(err)
		}
		as := func(key string) string { return apitest.User{Login: "api", Key: key}.Auth() }
		send := func(key, dom string, form url.Values) {
			t.Helper()
			form.Set("subject", "Hi")
			form.Set("text", "Hello")
			r := e.Do(apitest.Request{Method: "POST", Path: "/v3/" + dom + "/messages", Auth: as(key), Body: form.Encode(),
				Header: http.Header{"Content-Type": {"application/x-www-form-urlencoded"}}})
			if r.StatusCode != 200 {
				t.Fatalf("send: %d %s", r.StatusCode, r.Body)
			}
		}
		send(e.user.Key, "shop.example.com", url.Values{"from": {"news@shop.example.com"}, "to": {"ann@rcpt.example.net", "ben@rcpt.example.net"},
			"o:tag": {"Newsletter", "weekly"}})
		send(e.user.Key, "shop.example.com", url.Values{"from": {"news@shop.example.com"}, "to": {"gone@rcpt.example.net", "blocked@rcpt.example.net"},
			"o:tag": {"newsletter"}})
		send(e.user.Key, "shop.example.com", url.Values{"from": {"news@shop.example.com"}, "to": {"later@rcpt.example.net"}})
		send(bob.Key, "bob.example.org", url.Values{"from": {"x@bob.example.org"}, "to": {"x@rcpt.example.net"}})
		for _, rcpt := range []string{"ann", "ben", "later"} {
			e.chain(t, rcpt+"@rcpt.example.net", event.Delivered)
		}
		e.chain(t, "gone@rcpt.example.net", event.Bounced)
		e.chain(t, "blocked@rcpt.example.net", event.Failed)

		get := func(key, path string) (*apitest.Response, mgStats) {
			t.Helper()
			r := e.Do(apitest.Request{Method: "GET", Path: path, Auth: as(key)})
			var s mgStats
			if r.StatusCode == 200 {
				json.Unmarshal(r.Body, &s)
			}
			s.body = string(r.Body)
			return r, s
		}
		ok := func(key, path string) mgStats {
			t.Helper()
			r, s := get(key, path)
			if r.StatusCode != 200 {
				t.Fatalf("GET %s: %d %s", path, r.StatusCode, r.Body)
			}
			return s
		}
		const all = "event=accepted&event=delivered&event=failed&event=opened&event=clicked&event=unsubscribed&event=complained&event=stored"
		dom := ok(e.user.Key, "/v3/shop.example.com/stats/total?"+all)
		if dom.Resolution != "day" || len(dom.Stats) != 8 {
			t.Errorf("default range: resolution %q, %d buckets; want day, 8 (7 days back and today)", dom.Resolution, len(dom.Stats))
		}
		for path, want := range map[string]int64{"accepted.total": 4, "accepted.outgoing": 4, "delivered.total": 3, "delivered.smtp": 3,
			"failed.permanent.total": 2, "failed.permanent.bounce": 1, "failed.permanent.suppress-bounce": 1,
			"failed.temporary.espblock": 1, "opened.total": 0, "complained.total": 0, "stored.total": 0} {
			if got := dom.sum(t, path); got != want {
				t.Errorf("domain %s = %d; want %d", path, got, want)
			}
		}
		last := dom.Stats[len(dom.Stats)-1]
		var at string
		json.Unmarshal(last["time"], &at)
		if tm, err := mail.ParseDate(at); err != nil || !strings.HasSuffix(at, " UTC") || tm.Hour() != 0 || time.Since(tm) > 25*time.Hour {
			t.Errorf("the last day bucket's time %q (%v)", at, err)
		}
		two := ok(e.user.Key, "/v3/shop.example.com/stats/total?event=accepted&event=delivered")
		if keys := len(two.Stats[0]); keys != 3 || two.Stats[0]["failed"] != nil {
			t.Errorf("a bucket with accepted and delivered asked has %d keys: %v", keys, two.Stats[0])
		}
		hourly := ok(e.user.Key, "/v3/shop.example.com/stats/total?event=accepted&duration=24h")
		if hourly.Resolution != "hour" || len(hourly.Stats) != 25 || hourly.sum(t, "accepted.total") != 4 {
			t.Errorf("duration 24h: %s, %d buckets, %d accepted; want hour, 25, 4", hourly.Resolution, len(hourly.Stats), hourly.sum(t, "accepted.total"))
		}
		now := time.Now().Unix()
		epoch := ok(e.user.Key, fmt.Sprintf("/v3/shop.example.com/stats/total?event=delivered&resolution=hour&start=%d&end=%d", now-7200, now))
		if len(epoch.Stats) != 3 || epoch.sum(t, "delivered.total") != 3 {
			t.Errorf("2 hours back by hour: %d buckets, %d delivered; want 3, 3", len(epoch.Stats), epoch.sum(t, "delivered.total"))
		}
		monthly := ok(e.user.Key, "/v3/shop.example.com/stats/total?event=failed&resolution=month")
		if monthly.Resolution != "month" || len(monthly.Stats) > 2 || monthly.sum(t, "failed.permanent.total") != 2 {
			t.Errorf("by month: %d buckets, %d failed", len(monthly.Stats), monthly.sum(t, "failed.permanent.total"))
		}
		// The account: its own domains, together.
		if acct := ok(e.user.Key, "/v3/stats/total?event=accepted"); acct.sum(t, "accepted.total") != 4 {
			t.Errorf("alice's account accepted %d; want 4 (not bob's)", acct.sum(t, "accepted.total"))
		}
		if acct := ok(bob.Key, "/v3/stats/total?event=accepted"); acct.sum(t, "accepted.total") != 1 {
			t.Errorf("bob's account accepted %d; want 1", acct.sum(t, "accepted.total"))
		}

		// Tags.
		var list struct {
			Items []struct {
				Tag, Description string
				FirstSeen        string `json:"first-seen"`
			}
			Paging map[string]string
		}
		r := e.Do(apitest.Request{Method: "GET", Path: "/v3/shop.example.com/tags", Auth: as(e.user.Key)})
		json.Unmarshal(r.Body, &list)
		if r.StatusCode != 200 || len(list.Items) != 2 || list.Items[0].Tag != "newsletter" || list.Items[1].Tag != "weekly" {
			t.Fatalf("tags: %d %s", r.StatusCode, r.Body)
		}
		if first, err := time.Parse(time.RFC3339, list.Items[0].FirstSeen); err != nil || time.Since(first) > time.Minute {
			t.Errorf("first-seen %q", list.Items[0].FirstSeen)
		}
		// Pages of one by name, following the paging URLs.
		var names []string
		next := "/v3/shop.example.com/tags?limit=1"
		for i := 0; i < 4 && next != ""; i++ {
			r := e.Do(apitest.Request{Method: "GET", Path: next, Auth: as(e.user.Key)})
			list.Items = nil
			json.Unmarshal(r.Body, &list)
			if len(list.Items) == 0 {
				break
			}
			names = append(names, list.Items[0].Tag)
			u, err := url.Parse(list.Paging["next"])
			if err != nil || u.Query().Get("page") != "next" {
				t.Fatalf("paging.next %q", list.Paging["next"])
			}
			next = u.RequestURI()
		}
		if strings.Join(names, " ") != "newsletter weekly" {
			t.Errorf("pages of one: %v", names)
		}
		tag := func(key, method, path string, form url.Values) *apitest.Response {
			t.Helper()
			req := apitest.Request{Method: method, Path: path, Auth: as(key)}
			if form != nil {
				req.Body, req.Header = form.Encode(), http.Header{"Content-Type": {"application/x-www-form-urlencoded"}}
			}
			return e.Do(req)
		}
		if r := tag(e.user.Key, "GET", "/v3/shop.example.com/tags/Newsletter", nil); r.StatusCode != 200 || r.JSON["tag"] != "newsletter" {
			t.Errorf("GET a tag in another case: %d %s", r.StatusCode, r.Body)
		}
		if r := tag(e.user.Key, "PUT", "/v3/shop.example.com/tags/newsletter", url.Values{"description": {"The monthly letter"}}); r.StatusCode != 200 ||
			r.JSON["message"] != "Tag updated" {
			t.Errorf("PUT: %d %s", r.StatusCode, r.Body)
		}
		_, news := get(e.user.Key, "/v3/shop.example.com/tags/newsletter/stats?event=accepted&event=delivered&event=failed")
		if news.Tag != "newsletter" || news.Description != "The monthly letter" || news.sum(t, "accepted.total") != 3 ||
			news.sum(t, "delivered.total") != 2 || news.sum(t, "failed.permanent.bounce") != 1 || news.sum(t, "failed.permanent.suppress-bounce") != 1 {
			t.Errorf("newsletter's stats: %s", news.body)
		}
		if r := tag(e.user.Key, "DELETE", "/v3/shop.example.com/tags/weekly", nil); r.StatusCode != 200 || r.JSON["message"] != "Tag deleted" {
			t.Errorf("DELETE: %d %s", r.StatusCode, r.Body)
		}
		for _, path := range []string{"/v3/shop.example.com/tags/weekly", "/v3/shop.example.com/tags/weekly/stats?event=accepted"} {
			if r := tag(e.user.Key, "GET", path, nil); r.StatusCode != 404 || r.JSON["message"] != "Tag not found" {
				t.Errorf("GET %s after DELETE: %d %s", path, r.StatusCode, r.Body)
			}
		}
		if after := ok(e.user.Key, "/v3/shop.example.com/stats/total?event=accepted"); after.sum(t, "accepted.total") != 4 {
			t.Errorf("the domain's accepted after deleting a tag: %d", after.sum(t, "accepted.total"))
		}

		// Bad input: 400 naming the parameter (and the limit).
		long := strings.Repeat("x", 129)
		for path, want := range map[string][]string{
			"/v3/shop.example.com/stats/total":                                        {"event"},
			"/v3/stats/total?start=1":                                                 {"event"},
			"/v3/shop.example.com/stats/total?event=bounced":                          {"event", "bounced"},
			"/v3/shop.example.com/stats/total?event=accepted&resolution=week":         {"resolution"},
			"/v3/shop.example.com/stats/total?event=accepted&start=2000&end=1000":     {"start"},
			"/v3/shop.example.com/stats/total?event=accepted&end=someday":             {"end"},
			"/v3/shop.example.com/stats/total?event=accepted&duration=2000h":          {"duration", "1000"},
			"/v3/shop.example.com/stats/total?event=accepted&duration=7w":             {"duration"},
			"/v3/shop.example.com/stats/total?event=accepted&resolution=hour&start=1": {"start", "1000"},
			"/v3/shop.example.com/stats/total?event=accepted&limit=3":                 {"limit"},
			"/v3/shop.example.com/tags?limit=1001":                                    {"limit", "1000"},
			"/v3/shop.example.com/tags?page=sideways":                                 {"page"},
			"/v3/shop.example.com/tags/" + long:                                       {"tag", "128"},
			"/v3/shop.example.com/tags/" + long + "/stats?event=accepted":             {"tag", "128"},
			"/v3/shop.example.com/tags/newsletter/stats":                              {"event"},
		} {
			r := tag(e.user.Key, "GET", path, nil)
			msg, _ := r.JSON["message"].(string)
			if r.StatusCode != 400 {
				t.Errorf("GET %s: %d %s; want 400", path, r.StatusCode, r.Body)
			}
			for _, w := range want {
				if !strings.Contains(msg, w) {
					t.Errorf("GET %s: %q does not name %q", path, msg, w)
				}
			}
		}
		if r := tag(e.user.Key, "PUT", "/v3/shop.example.com/tags/newsletter", url.Values{"description": {strings.Repeat("d", 1025)}}); r.StatusCode != 400 ||
			!strings.Contains(fmt.Sprint(r.JSON["message"]), "description") || !strings.Contains(fmt.Sprint(r.JSON["message"]), "1024") {
			t.Errorf("a long description: %d %s", r.StatusCode, r.Body)
		}
		if r := tag(e.user.Key, "PUT", "/v3/shop.example.com/tags/"+long, url.Values{"description": {"x"}}); r.StatusCode != 400 {
			t.Errorf("PUT a long tag: %d %s", r.StatusCode, r.Body)
		}
		if r := tag(e.user.Key, "PUT", "/v3/shop.example.com/tags/nosuch", url.Values{"description": {"x"}}); r.StatusCode != 404 {
			t.Errorf("PUT an unknown tag: %d %s", r.StatusCode, r.Body)
		}

		// Another account's domain: Mailgun's JSON 404, whatever the route.
		for _, c := range []struct{ method, path string }{
			{"GET", "/v3/bob.example.org/stats/total?event=accepted"},
			{"GET", "/v3/bob.example.org/tags"},
			{"GET", "/v3/bob.example.org/tags/newsletter"},
			{"PUT", "/v3/bob.example.org/tags/newsletter"},
			{"DELETE", "/v3/bob.example.org/tags/newsletter"},
			{"GET", "/v3/bob.example.org/tags/newsletter/stats?event=accepted"},
		} {
			var form url.Values
			if c.method == "PUT" {
				form = url.Values{"description": {"x"}}
			}
			r := tag(e.user.Key, c.method, c.path, form)
			if r.StatusCode != 404 || !strings.HasPrefix(r.Header.Get("Content-Type"), "application/json") || r.JSON["message"] == nil {
				t.Errorf("%s %s by alice: %d %s; want a JSON 404", c.method, c.path, r.StatusCode, r.Body)
			}
		}

		// Scopes: reading needs log:read, changing a tag send.
		sendOnly, _, err := e.App.Accounts.CreateKeyWith(ctx, "alice", account.KeyOptions{Scopes: []string{account.ScopeSend}})
		if err != nil {
			t.Fatal(err)
		}
		logOnly, _, err := e.App.Accounts.CreateKeyWith(ctx, "alice", account.KeyOptions{Scopes: []string{account.ScopeLogRead}})
		if err != nil {
			t.Fatal(err)
		}
		for _, c := range []struct {
			key, method, path string
			want              int
		}{
			{sendOnly, "GET", "/v3/shop.example.com/stats/total?event=accepted", 403},
			{sendOnly, "GET", "/v3/stats/total?event=accepted", 403},
			{sendOnly, "GET", "/v3/shop.example.com/tags", 403},
			{sendOnly, "GET", "/v3/shop.example.com/tags/newsletter", 403},
			{logOnly, "GET", "/v3/shop.example.com/tags/newsletter", 200},
			{logOnly, "GET", "/v3/shop.example.com/tags/newsletter/stats?event=accepted", 200},
			{logOnly, "DELETE", "/v3/shop.example.com/tags/newsletter", 403},
			{logOnly, "PUT", "/v3/shop.example.com/tags/newsletter", 403},
			{sendOnly, "PUT", "/v3/shop.example.com/tags/newsletter", 200},
		} {
			var form url.Values
			if c.method == "PUT" {
				form = url.Values{"description": {"by key"}}
			}
			if r := tag(c.key, c.method, c.path, form); r.StatusCode != c.want {
				t.Errorf("%s %s with a limited key: %d %s; want %d", c.method, c.path, r.StatusCode, r.Body, c.want)
			}
		}
		// The routes the tag routes share a pattern with still answer.
		if r := tag(e.user.Key, "GET", "/v3/shop.example.com/bounces/gone@rcpt.example.net", nil); r.StatusCode != 200 || r.JSON["address"] != "gone@rcpt.example.net" {
			t.Errorf("GET a bounce: %d %s", r.StatusCode, r.Body)
		}
		if r := tag(e.user.Key, "DELETE", "/v3/shop.example.com/bounces/gone@rcpt.example.net", nil); r.StatusCode != 200 {
			t.Errorf("DELETE a bounce: %d %s", r.StatusCode, r.Body)
		}
		if r := tag(e.user.Key, "GET", "/v3/shop.example.com/tags/newsletter/versions", nil); r.StatusCode != 404 || r.JSON["message"] == nil {
			t.Errorf("GET an unknown four-segment path: %d %s", r.StatusCode, r.Body)
		}
	})
}

// TestMailgunSDKStats: mailgun.js's stats and domain tags clients, after
// real sends, read the counts a user checks: stats.getDomain and
// getAccount, domainTags list, get, update, statistic and destroy.
func TestMailgunSDKStats(t *testing.T) {
	t.Parallel()
	e := startSend(t, store.SQLite, false, nil)
	bob := e.NewUser("bob")
	e.NewDomain(bob, "bob.example.org")
	const d = "shop.example.com"
	sends := []map[string]any{
		{"call": "messages.create", "domain": d, "data": map[string]any{"from": "news@shop.example.com",
			"to": []string{"ann@rcpt.example.net", "ben@rcpt.example.net"}, "subject": "Spring", "text": "Sale", "o:tag": []string{"Promo"}}},
		{"call": "messages.create", "domain": d, "data": map[string]any{"from": "news@shop.example.com",
			"to": "carl@rcpt.example.net", "subject": "Receipt", "text": "Thanks"}},
	}
	for i, r := range mailgunSDK(t, e, e.user.Key, sends) {
		if !r.OK {
			t.Fatalf("send %d: %+v", i, r)
		}
	}
	for _, rcpt := range []string{"ann", "ben", "carl"} {
		e.chain(t, rcpt+"@rcpt.example.net", event.Delivered)
	}
	steps := []map[string]any{
		{"call": "stats.getDomain", "domain": d, "query": map[string]any{"event": []string{"accepted", "delivered"}}},
		{"call": "stats.getAccount", "query": map[string]any{"event": "delivered", "duration": "24h"}},
		{"call": "domainTags.list", "domain": d},
		{"call": "domainTags.get", "domain": d, "tag": "promo"},
		{"call": "domainTags.update", "domain": d, "tag": "promo", "description": "Spring promotion"},
		{"call": "domainTags.statistic", "domain": d, "tag": "promo", "query": map[string]any{"event": "delivered"}},
		{"call": "domainTags.destroy", "domain": d, "tag": "promo"},
		{"call": "domainTags.get", "domain": d, "tag": "promo"},
		{"call": "stats.getDomain", "domain": "bob.example.org", "query": map[string]any{"event": "accepted"}},
		{"call": "stats.getDomain", "domain": d},
	}
	res := mailgunSDK(t, e, e.user.Key, steps)
	for i, r := range res[:7] {
		if !r.OK {
			t.Fatalf("step %d %v: %+v", i, steps[i]["call"], r)
		}
	}
	type bucket struct {
		Time      time.Time
		Accepted  *struct{ Total, Outgoing int }
		Delivered *struct{ Total, SMTP int }
		Failed    any
	}
	var dom struct {
		Start, End time.Time
		Resolution string
		Stats      []bucket
	}
	json.Unmarshal(res[0].Result, &dom)
	accepted, delivered := 0, 0
	for _, b := range dom.Stats {
		if b.Accepted == nil || b.Delivered == nil || b.Failed != nil || b.Time.IsZero() {
			t.Fatalf("stats.getDomain bucket %+v: %s", b, res[0].Result)
		}
		accepted, delivered = accepted+b.Accepted.Total, delivered+b.Delivered.Total
	}
	if dom.Resolution != "day" || len(dom.Stats) != 8 || accepted != 3 || delivered != 3 || dom.Start.IsZero() || !dom.End.After(dom.Start) {
		t.Errorf("stats.getDomain: %d accepted, %d delivered in %d buckets: %s", accepted, delivered, len(dom.Stats), res[0].Result)
	}
	var acct struct {
		Resolution string
		Stats      []bucket
	}
	json.Unmarshal(res[1].Result, &acct)
	delivered = 0
	for _, b := range acct.Stats {
		if b.Delivered != nil {
			delivered += b.Delivered.Total
		}
	}
	if acct.Resolution != "hour" || len(acct.Stats) != 25 || delivered != 3 {
		t.Errorf("stats.getAccount 24h: %d delivered in %d %s buckets", delivered, len(acct.Stats), acct.Resolution)
	}
	var tags struct {
		Items []struct {
			Tag       string
			FirstSeen time.Time `json:"first-seen"`
			LastSeen  time.Time `json:"last-seen"`
		}
	}
	json.Unmarshal(res[2].Result, &tags)
	if len(tags.Items) != 1 || tags.Items[0].Tag != "promo" || time.Since(tags.Items[0].FirstSeen) > time.Minute ||
		tags.Items[0].LastSeen.Before(tags.Items[0].FirstSeen) {
		t.Errorf("domainTags.list: %s", res[2].Result)
	}
	var one struct{ Tag, Description string }
	json.Unmarshal(res[3].Result, &one)
	if one.Tag != "promo" {
		t.Errorf("domainTags.get: %s", res[3].Result)
	}
	var stat struct {
		Tag, Description string
		Stats            []bucket
	}
	json.Unmarshal(res[5].Result, &stat)
	delivered = 0
	for _, b := range stat.Stats {
		delivered += b.Delivered.Total
	}
	if stat.Tag != "promo" || stat.Description != "Spring promotion" || delivered != 2 {
		t.Errorf("domainTags.statistic: %d delivered: %s", delivered, res[5].Result)
	}
	if !strings.Contains(string(res[6].Result), "Tag deleted") {
		t.Errorf("domainTags.destroy: %s", res[6].Result)
	}
	for i, want := range map[int]int{7: 404, 8: 404, 9: 400} {
		if res[i].OK || res[i].Status != want {
			t.Errorf("step %d %v: %+v; want %d", i, steps[i], res[i], want)
		}
	}
}
