package app_test

import (
	"context"
	"html"
	"strings"
	"testing"

	"github.com/postline/postline/internal/apitest"
	"github.com/postline/postline/internal/app"
	"github.com/postline/postline/internal/domain"
	"github.com/postline/postline/internal/store"
)

// The records a domain's page and the API give (issue 32, defect 7): a
// relay domain's SPF names the relay's include, a tracking host on a
// server without --public-url is not told to CNAME to an IP address, and
// the DKIM key is also given as quoted strings of at most 255 characters.
func TestDNSAdvice(t *testing.T) {
	t.Parallel()
	env := apitest.StartWith(t, store.SQLite, nil, app.Options{DKIMKeyBits: 2048}) // a value past 255 octets
	alice := env.NewUser("alice")
	ctx := context.Background()
	d, err := env.App.Domains.Add(ctx, domain.AddParams{AccountID: alice.ID, Name: "news.example", Trusted: true,
		Delivery: domain.Delivery{Mode: domain.ModeSMTP, Host: "smtp.mailgun.org", User: "u", Password: "p"}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := env.App.Domains.SetTracking(ctx, d, "track.news.example"); err != nil {
		t.Fatal(err)
	}
	resp := env.Do(apitest.Request{Method: "GET", Path: "/api/domains/news.example", Auth: alice.Auth()})
	recs := map[string]map[string]any{}
	for _, r := range resp.JSON["data"].(map[string]any)["dns_records"].([]any) {
		rec := r.(map[string]any)
		recs[rec["purpose"].(string)] = rec
	}
	if spf := recs["spf"]; spf["value"] != "v=spf1 include:mailgun.org ~all" || !strings.Contains(spf["note"].(string), "smtp.mailgun.org") {
		t.Errorf("the relay domain's SPF record: %v", spf)
	}
	if tr := recs["tracking"]; tr["value"] != "" || tr["required"] != false || !strings.Contains(tr["note"].(string), "--public-url") {
		t.Errorf("the tracking CNAME without --public-url: %v, want no value (never the listener's IP address) and a note", tr)
	}
	split, _ := recs["dkim"]["value_split"].(string)
	if !strings.HasPrefix(split, `"v=DKIM1; k=rsa; p=`) || strings.Count(split, `" "`) != 1 {
		t.Errorf("the DKIM value as quoted strings: %q", split)
	}

	b := &browser{t: t, base: env.URL}
	b.signIn("alice", alice.Key, "/")
	_, page := b.do("GET", "/domains/news.example", nil, nil)
	page = html.UnescapeString(page)
	for _, want := range []string{"v=spf1 include:mailgun.org ~all", "leaves through smtp.mailgun.org", split, "sets --public-url", "not known yet"} {
		if !strings.Contains(page, want) {
			t.Errorf("the domain page lacks %q", want)
		}
	}
}
