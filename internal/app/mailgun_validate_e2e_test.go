package app_test

import (
	"net/url"
	"strings"
	"testing"

	"github.com/postline/postline/internal/apitest"
	"github.com/postline/postline/internal/config"
	"github.com/postline/postline/internal/smtptest"
	"github.com/postline/postline/internal/store"
)

// mgValidate asks /v4/address/validate about addr with Mailgun's auth,
// by GET or by a POSTed form.
func mgValidate(t *testing.T, env *apitest.Env, key, method string, q url.Values) *apitest.Response {
	t.Helper()
	auth := apitest.User{Login: "api", Key: key}.Auth()
	if method == "GET" {
		return env.Do(apitest.Request{Method: "GET", Path: "/v4/address/validate?" + q.Encode(), Auth: auth})
	}
	return env.Do(apitest.Request{Method: "POST", Path: "/v4/address/validate", Auth: auth, Body: q.Encode(),
		Header: map[string][]string{"Content-Type": {"application/x-www-form-urlencoded"}}})
}

// TestMailgunValidateAPI: /v4/address/validate answers Mailgun's fields,
// mapped from Postline's verdict as the README's table says, by GET and
// by POST; no address is a 400; the budget is the hourly validation one,
// shared with /api/email/validate.
func TestMailgunValidateAPI(t *testing.T) {
	t.Parallel()
	forEachDialect(t, func(t *testing.T, d store.Dialect) {
		env := apitest.Start(t, d, func(c *config.Config) { c.RateValidationPerHour = 40 })
		env.DNS.AddMX("acme-mail.com", 10, "mx.acme-mail.com")
		env.DNS.AddA("mx.acme-mail.com", "127.0.0.1")
		env.DNS.AddMX("nullmx-corp.net", 0, ".")
		env.DNS.AddMX("gmail.com", 5, "gmail-smtp-in.l.google.com")
		u := env.NewUser("alice")
		cases := []struct {
			addr, result, risk, reasons string
			disposable, role            bool
			didYouMean, root            any
		}{
			{"jane@acme-mail.com", "deliverable", "low", "", false, false, nil, nil},
			{"jane+news@acme-mail.com", "deliverable", "low", "", false, false, nil, "jane@acme-mail.com"},
			{"info@acme-mail.com", "deliverable", "medium", "mailbox_is_role_address", false, true, nil, nil},
			{"jane@nullmx-corp.net", "undeliverable", "high", "no_mx", false, false, nil, nil},
			{"jane@nx-corp.net", "undeliverable", "high", "no_mx", false, false, nil, nil},
			{"jane@gmail.con", "undeliverable", "high", "no_mx", false, false, "jane@gmail.com", nil},
			{"jane@mailinator.com", "do_not_send", "high", "mailbox_is_disposable_address", true, false, nil, nil},
			{"jane@test.invalid", "undeliverable", "high", "reserved_domain", false, false, nil, nil},
			{"not-an-address", "undeliverable", "high", "failed_syntax_check", false, false, nil, nil},
		}
		for i, c := range cases {
			method := []string{"GET", "POST"}[i%2]
			resp := mgValidate(t, env, u.Key, method, url.Values{"address": {c.addr}})
			if resp.StatusCode != 200 {
				t.Fatalf("%s %s: %d %s", method, c.addr, resp.StatusCode, resp.Body)
			}
			m := resp.JSON
			reasons := []string{}
			for _, r := range m["reason"].([]any) {
				reasons = append(reasons, r.(string))
			}
			if m["address"] != c.addr || m["result"] != c.result || m["risk"] != c.risk || strings.Join(reasons, ",") != c.reasons ||
				m["is_disposable_address"] != c.disposable || m["is_role_address"] != c.role || m["did_you_mean"] != c.didYouMean ||
				m["root_address"] != c.root {
				t.Errorf("%s %s: %s", method, c.addr, resp.Body)
			}
			if v, ok := m["engagement"]; !ok || v != nil {
				t.Errorf("%s: engagement %v, want null", c.addr, v)
			}
		}
		// Bad input and credentials, in Mailgun's {message} shape.
		for _, q := range []url.Values{{}, {"address": {""}}, {"address": {strings.Repeat("a", 600) + "@acme-mail.com"}},
			{"address": {"jane@acme-mail.com"}, "provider_lookup": {"maybe"}}} {
			if resp := mgValidate(t, env, u.Key, "GET", q); resp.StatusCode != 400 || resp.JSON["message"] == nil || len(resp.JSON) != 1 {
				t.Errorf("GET %v: %d %s, want 400 {message}", q, resp.StatusCode, resp.Body)
			}
		}
		if resp := mgValidate(t, env, "pl_wrong", "GET", url.Values{"address": {"jane@acme-mail.com"}}); resp.StatusCode != 401 {
			t.Errorf("wrong key: %d %s", resp.StatusCode, resp.Body)
		}
		// provider_lookup on a server that does not probe: the checks
		// without the mailbox.
		if resp := mgValidate(t, env, u.Key, "GET", url.Values{"address": {"jane@acme-mail.com"}, "provider_lookup": {"true"}}); resp.StatusCode != 200 || resp.JSON["result"] != "deliverable" {
			t.Errorf("provider_lookup without probing: %d %s", resp.StatusCode, resp.Body)
		}
		// The hourly validation budget (40), shared with /api/email/validate.
		used := len(cases) + 4 + 1
		for ; used < 39; used++ {
			if resp := env.Do(apitest.Request{Method: "POST", Path: "/api/email/validate", Auth: u.Auth(), Body: map[string]string{"email": "x@test.invalid"}}); resp.StatusCode != 200 {
				t.Fatalf("validation %d: %d %s", used, resp.StatusCode, resp.Body)
			}
		}
		if resp := mgValidate(t, env, u.Key, "GET", url.Values{"address": {"x@test.invalid"}}); resp.StatusCode != 200 || resp.Header.Get("X-RateLimit-Limit") != "40" {
			t.Fatalf("40th validation: %d %s (limit %q)", resp.StatusCode, resp.Body, resp.Header.Get("X-RateLimit-Limit"))
		}
		resp := mgValidate(t, env, u.Key, "POST", url.Values{"address": {"x@test.invalid"}})
		if resp.StatusCode != 429 || resp.Header.Get("Retry-After") == "" || resp.JSON["message"] == nil || len(resp.JSON) != 1 {
			t.Errorf("41st validation: %d %s, want 429 {message} with Retry-After", resp.StatusCode, resp.Body)
		}
	})
}

// TestMailgunValidateProviderLookup: on a server that probes,
// provider_lookup=true asks the MX (a local SMTP server) and a refused
// mailbox is undeliverable, mailbox_does_not_exist; a catch-all domain is
// catch_all; without provider_lookup nothing is probed.
func TestMailgunValidateProviderLookup(t *testing.T) {
	t.Parallel()
	sink := smtptest.New(t, smtptest.Config{OnlyDomains: []string{"probe-corp.net"}})
	sink.Known("ok@probe-corp.net")
	env := apitest.Start(t, store.SQLite, func(c *config.Config) {
		c.MXPort = sink.Port()
		c.ValidationSMTPProbe, c.ValidationHelo, c.ValidationProbeAllowPrivate = true, "probe.postline.test", true
	})
	for _, d := range []string{"probe-corp.net", "all-corp.net"} {
		env.DNS.AddMX(d, 10, "mx."+d)
		env.DNS.AddA("mx."+d, "127.0.0.1")
	}
	u := env.NewUser("alice")
	for _, c := range []struct {
		addr, lookup, result, risk, reason string
	}{
		{"gone@probe-corp.net", "", "deliverable", "low", ""},
		{"ok@probe-corp.net", "true", "deliverable", "low", ""},
		{"gone@probe-corp.net", "true", "undeliverable", "high", "mailbox_does_not_exist"},
		{"anyone@all-corp.net", "true", "catch_all", "medium", "catch_all"},
	} {
		q := url.Values{"address": {c.addr}}
		if c.lookup != "" {
			q.Set("provider_lookup", c.lookup)
		}
		resp := mgValidate(t, env, u.Key, "GET", q)
		reasons, _ := resp.JSON["reason"].([]any)
		got := ""
		if len(reasons) > 0 {
			got = reasons[0].(string)
		}
		if resp.StatusCode != 200 || resp.JSON["result"] != c.result || resp.JSON["risk"] != c.risk || got != c.reason {
			t.Errorf("%s provider_lookup=%q: %d %s, want %s %s %q", c.addr, c.lookup, resp.StatusCode, resp.Body, c.result, c.risk, c.reason)
		}
	}
}
