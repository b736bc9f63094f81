package app_test

import (
	"context"
	"fmt"
	"net/url"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/postline/postline/internal/apitest"
	"github.com/postline/postline/internal/event"
	"github.com/postline/postline/internal/store"
)

// logFixture records 60 entries for alice.example, 37 minutes apart, with
// every field cycling through a few values, and returns them with ids.
func logFixture(t *testing.T, env *apitest.Env, domainID int64) []event.Entry {
	t.Helper()
	base := time.Now().UTC().Truncate(time.Hour).Add(-72 * time.Hour)
	senders := []string{"News@Alice.example", "billing@alice.example", "noreply@alice.example"}
	rcpts := []string{"Carol@Example.net", "dave@example.org", "erin@example.com", "frank@example.net"}
	subjects := []string{"Your invoice #1001", "Weekly NEWS", "50% off", "Reset your password", "Über uns"}
	tags := []string{"", "billing", "news,weekly", "Password-Reset"}
	types := event.Types()
	var in []event.Entry
	for i := 0; i < 60; i++ {
		in = append(in, event.Entry{DomainID: domainID, MessageID: fmt.Sprintf("<m%d@alice.example>", i),
			Type: types[i%len(types)], Sender: senders[i%3], Recipient: rcpts[i%4], Subject: subjects[i%5],
			Tags: tags[i%4], CreatedAt: base.Add(time.Duration(i) * 37 * time.Minute),
			Details: event.NewDetails(map[string]any{"attempt": i})})
	}
	if err := env.App.Events.Record(context.Background(), in...); err != nil {
		t.Fatal(err)
	}
	got, err := store.NewEvents(env.App.DB).List(context.Background(), event.Filter{DomainID: domainID, Order: event.OldestFirst, Limit: 100})
	if err != nil || len(got) != 60 {
		t.Fatalf("fixture: %d entries, %v", len(got), err)
	}
	return got
}

var rfc3339ms = regexp.MustCompile(`^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$`)

func TestLogListOverHTTP(t *testing.T) {
	t.Parallel()
	forEachDialect(t, func(t *testing.T, d store.Dialect) {
		env := apitest.Start(t, d, nil)
		alice, bob := env.NewUser("alice"), env.NewUser("bob")
		dom := env.NewDomain(alice, "alice.example")
		other := env.NewDomain(bob, "bob.example")
		all := logFixture(t, env, dom.ID)
		// Bob's entries must never show in alice's lists.
		if err := env.App.Events.Record(context.Background(), event.Entry{DomainID: other.ID, Type: event.Delivered,
			Sender: "news@alice.example", Recipient: "carol@example.net", Subject: "Your invoice #1001"}); err != nil {
			t.Fatal(err)
		}
		at := func(i int) time.Time { return all[i].CreatedAt }
		cases := []struct {
			name  string
			query url.Values
			keep  func(e event.Entry) bool
		}{
			{"no filter", nil, func(event.Entry) bool { return true }},
			{"start, Z", url.Values{"start": {at(20).Format(time.RFC3339)}}, func(e event.Entry) bool { return !e.CreatedAt.Before(at(20)) }},
			{"start, +02:00 offset", url.Values{"start": {at(20).In(time.FixedZone("", 7200)).Format(time.RFC3339)}},
				func(e event.Entry) bool { return !e.CreatedAt.Before(at(20)) }},
			{"end, inclusive", url.Values{"end": {at(10).Format("2006-01-02T15:04:05.000Z")}}, func(e event.Entry) bool { return !e.CreatedAt.After(at(10)) }},
			{"end, a date: the whole day", url.Values{"end": {at(30).Format("2006-01-02")}},
				func(e event.Entry) bool { return e.CreatedAt.Format("2006-01-02") <= at(30).Format("2006-01-02") }},
			{"start, no zone: UTC", url.Values{"start": {at(40).Format("2006-01-02T15:04:05")}}, func(e event.Entry) bool { return !e.CreatedAt.Before(at(40)) }},
			{"start and end", url.Values{"start": {at(5).Format(time.RFC3339)}, "end": {at(25).Format(time.RFC3339)}},
				func(e event.Entry) bool { return !e.CreatedAt.Before(at(5)) && !e.CreatedAt.After(at(25)) }},
			{"sender, other case", url.Values{"sender": {"NEWS@alice.example"}}, func(e event.Entry) bool { return e.Sender == "News@Alice.example" }},
			{"recipient, other case", url.Values{"recipient": {"carol@example.NET"}}, func(e event.Entry) bool { return e.Recipient == "Carol@Example.net" }},
			{"recipient is exact", url.Values{"recipient": {"carol"}}, func(event.Entry) bool { return false }},
			{"subject substring", url.Values{"subject": {"news"}}, func(e event.Entry) bool { return e.Subject == "Weekly NEWS" }},
			{"subject, non-ASCII", url.Values{"subject": {"ÜBER"}}, func(e event.Entry) bool { return e.Subject == "Über uns" }},
			{"subject, % is literal", url.Values{"subject": {"50%"}}, func(e event.Entry) bool { return e.Subject == "50% off" }},
			{"tags substring", url.Values{"tags": {"RESET"}}, func(e event.Entry) bool { return e.Tags == "Password-Reset" }},
			{"event_type", url.Values{"event_type": {"temporary_fail"}}, func(e event.Entry) bool { return e.Type == event.TemporaryFail }},
			{"event_type send", url.Values{"event_type": {"send"}}, func(e event.Entry) bool { return e.Type == event.Send }},
			{"combined", url.Values{"sender": {"billing@alice.example"}, "recipient": {"dave@example.org"}, "start": {at(3).Format(time.RFC3339)}},
				func(e event.Entry) bool {
					return e.Sender == "billing@alice.example" && e.Recipient == "dave@example.org" && !e.CreatedAt.Before(at(3))
				}},
			{"combined substrings and type", url.Values{"subject": {"your"}, "tags": {"i"}, "event_type": {"queued"}},
				func(e event.Entry) bool {
					return strings.Contains(strings.ToLower(e.Subject), "your") && strings.Contains(strings.ToLower(e.Tags), "i") && e.Type == event.Queued
				}},
			{"nothing matches", url.Values{"sender": {"nobody@alice.example"}}, func(event.Entry) bool { return false }},
		}
		for _, c := range cases {
			var want []int64
			for i := len(all) - 1; i >= 0; i-- { // newest first
				if c.keep(all[i]) {
					want = append(want, all[i].ID)
				}
			}
			resp := env.Do(apitest.Request{Method: "GET", Path: "/api/domains/alice.example/log?" + c.query.Encode(), Auth: alice.Auth()})
			if resp.StatusCode != 200 {
				t.Fatalf("%s: %d %s", c.name, resp.StatusCode, resp.Body)
			}
			if got := logIDs(resp); !slices.Equal(got, want) {
				t.Errorf("%s (?%s): ids %v, want %v", c.name, c.query.Encode(), got, want)
			}
			checkLogPage(t, c.name, resp, map[string]float64{"count": float64(len(want)), "offset": 0, "limit": 1000,
				"total": float64(len(want)), "per_page": 1000, "current_page": 1, "last_page": 1})
		}

		// One entry in full.
		resp := env.Do(apitest.Request{Method: "GET", Path: "/api/domains/alice.example/log?limit=1", Auth: alice.Auth()})
		e := resp.JSON["data"].([]any)[0].(map[string]any)
		last := all[59]
		if e["id"] != float64(last.ID) || e["message_id"] != last.MessageID || e["event_type"] != string(last.Type) ||
			e["sender"] != last.Sender || e["recipient"] != last.Recipient || e["subject"] != last.Subject ||
			e["created_at"] != last.CreatedAt.Format("2006-01-02T15:04:05.000Z") || !rfc3339ms.MatchString(e["created_at"].(string)) ||
			e["details"].(map[string]any)["attempt"] != 59.0 {
			t.Errorf("newest entry = %v, want %+v", e, last)
		}
		if e["tags"] != last.Tags {
			t.Errorf("tags = %v, want %q", e["tags"], last.Tags)
		}
		resp = env.Do(apitest.Request{Method: "GET", Path: "/api/domains/alice.example/log?limit=4", Auth: alice.Auth()})
		if e := resp.JSON["data"].([]any)[3].(map[string]any); all[56].Tags != "" || e["id"] != float64(all[56].ID) || e["tags"] != nil {
			t.Errorf("entry without tags: %v, want tags null", e)
		}
		if resp.Header.Get("X-RateLimit-Limit") == "" || resp.Header.Get("X-RateLimit-Remaining") == "" {
			t.Errorf("missing X-RateLimit headers: %v", resp.Header)
		}

		// Pagination arithmetic.
		for _, c := range []struct {
			query string
			first int // index in all of the page's first entry (newest first), -1 for none
			want  map[string]float64
		}{
			{"limit=7&offset=14", 59 - 14, map[string]float64{"count": 7, "offset": 14, "limit": 7, "total": 60, "per_page": 7, "current_page": 3, "last_page": 9}},
			{"limit=7&offset=56", 59 - 56, map[string]float64{"count": 4, "total": 60, "current_page": 9, "last_page": 9}},
			{"limit=10&offset=5", 59 - 5, map[string]float64{"count": 10, "current_page": 1, "last_page": 6}},
			{"limit=60", 59, map[string]float64{"count": 60, "last_page": 1}},
			{"offset=100", -1, map[string]float64{"count": 0, "offset": 100, "total": 60, "current_page": 1, "last_page": 1}},
			{"limit=10000&sender=nobody@x", -1, map[string]float64{"count": 0, "total": 0, "per_page": 10000, "last_page": 1}},
		} {
			resp := env.Do(apitest.Request{Method: "GET", Path: "/api/domains/alice.example/log?" + c.query, Auth: alice.Auth()})
			if resp.StatusCode != 200 {
				t.Fatalf("%s: %d %s", c.query, resp.StatusCode, resp.Body)
			}
			checkLogPage(t, c.query, resp, c.want)
			if ids := logIDs(resp); c.first >= 0 && (len(ids) == 0 || ids[0] != all[c.first].ID) {
				t.Errorf("%s: first id %v, want %d", c.query, ids, all[c.first].ID)
			}
		}

		// Bad parameters: 422 {"error": ...} naming each.
		for _, c := range []struct{ query, field string }{
			{"limit=0", "limit"}, {"limit=10001", "limit"}, {"limit=abc", "limit"}, {"limit=1.5", "limit"},
			{"offset=-1", "offset"}, {"offset=x", "offset"}, {"offset=9223372036854775807&recipient=c@x.example", "offset"},
			{"recipient=a%00b", "recipient"}, {"subject=a%00b", "subject"},
			{"start=yesterday", "start"}, {"end=2026-13-01", "end"}, {"start=2026-11-21T25:00:00Z", "start"},
			{"start=2026-11-21&end=2026-11-20", "end"},
			{"event_type=sent", "event_type"}, {"event_type=Delivered", "event_type"},
			{"sender=" + strings.Repeat("a", 1001), "sender"},
		} {
			resp := env.Do(apitest.Request{Method: "GET", Path: "/api/domains/alice.example/log?" + c.query, Auth: alice.Auth()})
			msg, _ := resp.JSON["error"].(string)
			errs, _ := resp.JSON["errors"].(map[string]any)
			if resp.StatusCode != 422 || !strings.Contains(msg, c.field) || errs[c.field] == nil || resp.JSON["success"] != nil {
				t.Errorf("?%.40s: %d %s; want 422 {error naming %s}", c.query, resp.StatusCode, resp.Body, c.field)
			}
		}
		resp = env.Do(apitest.Request{Method: "GET", Path: "/api/domains/alice.example/log?limit=0&offset=-2&event_type=x", Auth: alice.Auth()})
		if msg, _ := resp.JSON["error"].(string); resp.StatusCode != 422 || !strings.Contains(msg, "limit") ||
			!strings.Contains(msg, "offset") || !strings.Contains(msg, "event_type") {
			t.Errorf("three bad parameters: %d %s; want all three named", resp.StatusCode, resp.Body)
		}
	})
}

func logIDs(resp *apitest.Response) []int64 {
	var out []int64
	data, _ := resp.JSON["data"].([]any)
	for _, e := range data {
		out = append(out, int64(e.(map[string]any)["id"].(float64)))
	}
	return out
}

// checkLogPage compares the envelope's numbers with want (top-level count,
// offset, limit; the others under pagination).
func checkLogPage(t *testing.T, name string, resp *apitest.Response, want map[string]float64) {
	t.Helper()
	pg, _ := resp.JSON["pagination"].(map[string]any)
	for k, v := range want {
		got := resp.JSON[k]
		if k != "count" && k != "offset" && k != "limit" {
			got = pg[k]
		}
		if got != v {
			t.Errorf("%s: %s = %v, want %v", name, k, got, v)
		}
	}
	if pg["total_exact"] != true {
		t.Errorf("%s: total_exact = %v, want true", name, pg["total_exact"])
	}
}

func TestLogEndpointsAuthAndOwnership(t *testing.T) {
	t.Parallel()
	forEachDialect(t, func(t *testing.T, d store.Dialect) {
		env := apitest.Start(t, d, nil)
		alice, bob := env.NewUser("alice"), env.NewUser("bob")
		env.NewDomain(alice, "alice.example")
		for _, path := range []string{"/api/domains/alice.example/log", "/api/domains/alice.example/log/stream", "/api/domains/alice.example/log/export"} {
			for _, c := range []struct {
				name, path, auth string
				status           int
				want             map[string]any
			}{
				{"other account's domain", path, bob.Auth(), 404, map[string]any{"error": "Domain not found or not owned by user"}},
				{"unknown domain", strings.Replace(path, "alice.example", "nope.example", 1), alice.Auth(), 404,
					map[string]any{"error": "Domain not found or not owned by user"}},
				{"no credentials", path, "", 401, map[string]any{"error": "Authorization header is required"}},
				{"wrong key", path, apitest.User{Login: "alice", Key: "pl_nope"}.Auth(), 401, map[string]any{"error": "Invalid credentials"}},
			} {
				resp := env.Do(apitest.Request{Method: "GET", Path: c.path, Auth: c.auth})
				if resp.StatusCode != c.status || !sameJSON(resp.JSON, c.want) {
					t.Errorf("%s %s: %d %s; want %d %v", c.name, c.path, resp.StatusCode, resp.Body, c.status, c.want)
				}
			}
		}
		if err := env.App.Accounts.DisableUser(context.Background(), "alice"); err != nil {
			t.Fatal(err)
		}
		for _, path := range []string{"/api/domains/alice.example/log", "/api/domains/alice.example/log/stream", "/api/domains/alice.example/log/export"} {
			resp := env.Do(apitest.Request{Method: "GET", Path: path, Auth: alice.Auth()})
			if resp.StatusCode != 400 || !sameJSON(resp.JSON, map[string]any{"error": "User authentication missing"}) {
				t.Errorf("disabled account %s: %d %s; want 400 User authentication missing", path, resp.StatusCode, resp.Body)
			}
		}
	})
}
