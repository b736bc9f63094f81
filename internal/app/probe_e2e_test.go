package app_test

import (
	"fmt"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/postline/postline/internal/apitest"
	"github.com/postline/postline/internal/config"
	"github.com/postline/postline/internal/smtptest"
	"github.com/postline/postline/internal/store"
)

// TestMailboxProbe: with --validation-smtp-probe, check_mailbox asks the
// address's MX (a local SMTP server scripted per recipient) and the
// verdict says deliverable, mailbox_not_found, mailbox_full, greylisted,
// catch_all or smtp_unavailable; without check_mailbox nothing is probed
// and the verdict never says mailbox_not_found; a server without probing
// refuses check_mailbox; a role address accepted is risky.
func TestMailboxProbe(t *testing.T) {
	t.Parallel()
	sink := smtptest.New(t, smtptest.Config{OnlyDomains: []string{"probe-corp.net"}})
	sink.Known("ok@probe-corp.net", "info@probe-corp.net")
	full := smtptest.Reply{Code: 452, Enhanced: [3]int{4, 2, 2}, Message: "mailbox full"}
	sink.Script("full@probe-corp.net", full, full)
	grey := smtptest.Reply{Code: 451, Enhanced: [3]int{4, 7, 1}, Message: "greylisted, try again in 5 minutes"}
	sink.Script("grey@probe-corp.net", grey, grey)
	// A server on 127.0.0.3 that accepts connections and never greets.
	smtptest.Silent(t, net.JoinHostPort("127.0.0.3", fmt.Sprint(sink.Port())))
	env := apitest.Start(t, store.SQLite, func(c *config.Config) {
		c.MXPort = sink.Port()
		c.ValidationSMTPProbe, c.ValidationHelo, c.ValidationProbeAllowPrivate = true, "probe.postline.test", true
		c.ValidationProbeTimeout = 1500 * time.Millisecond
		c.ValidationProbeRequestBudget = time.Second
	})
	env.DNS.AddMX("reuse-corp.net", 10, "mx.reuse-corp.net")
	env.DNS.AddA("mx.reuse-corp.net", "127.0.0.1")
	env.DNS.AddMX("slow-corp.net", 10, "mx.slow-corp.net")
	env.DNS.AddA("mx.slow-corp.net", "127.0.0.3")
	for _, d := range []string{"probe-corp.net", "all-corp.net"} {
		env.DNS.AddMX(d, 10, "mx."+d)
		env.DNS.AddA("mx."+d, "127.0.0.1")
	}
	env.DNS.AddMX("down-corp.net", 10, "mx.down-corp.net")
	env.DNS.AddA("mx.down-corp.net", "127.0.0.2") // nothing listens there
	u := env.NewUser("alice")
	validate := func(email string, probe bool) map[string]any {
		t.Helper()
		resp := env.Do(apitest.Request{Method: "POST", Path: "/api/email/validate", Auth: u.Auth(),
			Body: map[string]any{"email": email, "check_mailbox": probe}})
		if resp.StatusCode != 200 {
			t.Fatalf("%s: %d %s", email, resp.StatusCode, resp.Body)
		}
		return resp.JSON["data"].(map[string]any)
	}
	for _, c := range []struct {
		email, verdict, reasons, outcome string
	}{
		{"ok@probe-corp.net", "deliverable", "", "accepted"},
		{"gone@probe-corp.net", "undeliverable", "mailbox_not_found", "rejected"},
		{"full@probe-corp.net", "risky", "mailbox_full", "full"},
		{"grey@probe-corp.net", "unknown", "greylisted", "greylisted"},
		{"anyone@all-corp.net", "risky", "catch_all", "accepted"},
		{"info@probe-corp.net", "risky", "role_account", "accepted"},
		{"x@down-corp.net", "unknown", "smtp_unavailable", "unavailable"},
		{"x@slow-corp.net", "unknown", "smtp_unavailable", "unavailable"},
	} {
		start := time.Now()
		r := validate(c.email, true)
		mb, _ := r["mailbox"].(map[string]any)
		reasons := fmt.Sprint(r["deliverability_reasons"])
		if r["deliverability"] != c.verdict || reasons != "["+c.reasons+"]" || mb == nil || mb["outcome"] != c.outcome || r["is_valid"] != true {
			t.Errorf("%s: %s %s %v, want %s [%s] %s", c.email, r["deliverability"], reasons, mb, c.verdict, c.reasons, c.outcome)
		}
		if d := time.Since(start); d > 5*time.Second {
			t.Errorf("%s took %s: past the probe's budget", c.email, d)
		}
	}
	// Probes of one MX share a session: the second address is asked on the
	// session the first one left open.
	sessions := sink.Sessions()
	validate("a@reuse-corp.net", true)
	validate("b@reuse-corp.net", true)
	if n := sink.Sessions() - sessions; n != 1 {
		t.Errorf("two probes of one MX opened %d sessions, want 1", n)
	}
	// A definitive finding is reused; a greylisting is asked again.
	if mb := validate("gone@probe-corp.net", true)["mailbox"].(map[string]any); mb["cached"] != true || mb["outcome"] != "rejected" {
		t.Errorf("the second probe of gone@: %v", mb)
	}
	if r := validate("grey@probe-corp.net", true); r["mailbox"].(map[string]any)["retry_after"] == nil {
		t.Errorf("greylisted without retry_after: %v", r)
	}
	// Without check_mailbox nothing is asked, and a missing mailbox is not
	// reported missing.
	before := len(sink.Messages())
	if r := validate("gone@probe-corp.net", false); r["deliverability"] != "deliverable" || r["mailbox"] != nil {
		t.Errorf("without check_mailbox: %v", r)
	}
	if len(sink.Messages()) != before {
		t.Error("a probe sent a message")
	}
	// The bulk endpoint probes each address.
	resp := env.Do(apitest.Request{Method: "POST", Path: "/api/email/validate/bulk/strict", Auth: u.Auth(),
		Body: map[string]any{"emails": []string{"ok@probe-corp.net", "gone@probe-corp.net"}, "check_mailbox": true}})
	results := resp.JSON["data"].(map[string]any)["results"].([]any)
	if results[0].(map[string]any)["deliverability"] != "deliverable" || results[1].(map[string]any)["deliverability"] != "undeliverable" {
		t.Errorf("bulk with check_mailbox: %s", resp.Body)
	}
	// A list-cleaning job probes each mailbox and counts the verdicts.
	resp = env.Do(apitest.Request{Method: "POST", Path: "/api/email/validate/jobs", Auth: u.Auth(),
		Body: map[string]any{"emails": []string{"ok@probe-corp.net", "gone@probe-corp.net", "full@probe-corp.net", "anyone@all-corp.net"}, "check_mailbox": true}})
	if resp.StatusCode != 202 || resp.JSON["data"].(map[string]any)["check_mailbox"] != true {
		t.Fatalf("job: %d %s", resp.StatusCode, resp.Body)
	}
	jobPath := fmt.Sprintf("/api/email/validate/jobs/%v", resp.JSON["data"].(map[string]any)["id"])
	var job map[string]any
	waitFor(t, "the probing job", func() bool {
		job = env.Do(apitest.Request{Method: "GET", Path: jobPath, Auth: u.Auth()}).JSON["data"].(map[string]any)
		return job["status"] == "done"
	})
	if c := job["deliverability_counts"].(map[string]any); c["deliverable"] != 1.0 || c["undeliverable"] != 1.0 || c["risky"] != 2.0 {
		t.Errorf("job counts: %v", job)
	}
	csv := env.Do(apitest.Request{Method: "GET", Path: jobPath + "/results", Auth: u.Auth()})
	if !strings.Contains(string(csv.Body), "gone@probe-corp.net,valid,,,,") || !strings.Contains(string(csv.Body), ",undeliverable,mailbox_not_found") {
		t.Errorf("job results:\n%s", csv.Body)
	}
	// All the probes of one request share its budget: three addresses at a
	// server that never greets end together, not one after another.
	start := time.Now()
	resp = env.Do(apitest.Request{Method: "POST", Path: "/api/email/validate/bulk/strict", Auth: u.Auth(),
		Body: map[string]any{"emails": []string{"a@slow-corp.net", "b@slow-corp.net", "c@slow-corp.net"}, "check_mailbox": true}})
	for _, r := range resp.JSON["data"].(map[string]any)["results"].([]any) {
		if fmt.Sprint(r.(map[string]any)["deliverability_reasons"]) != "[smtp_unavailable]" {
			t.Errorf("a probe past the request's budget: %v", r)
		}
	}
	if d := time.Since(start); d > 2500*time.Millisecond {
		t.Errorf("three probes at a silent server took %s with a 1 s request budget", d)
	}
	// The metric counts probes by outcome.
	metrics := env.Do(apitest.Request{Method: "GET", Path: "/metrics"})
	if !strings.Contains(string(metrics.Body), `postline_validation_probes_total{outcome="rejected"}`) {
		t.Error("postline_validation_probes_total does not count the rejected probes")
	}

	// An MX at a loopback or private address is not probed unless the
	// operator allows it (tests): such a domain takes no mail from outside.
	strict := apitest.Start(t, store.SQLite, func(c *config.Config) {
		c.MXPort = sink.Port()
		c.ValidationSMTPProbe, c.ValidationHelo = true, "probe.postline.test"
	})
	strict.DNS.AddMX("probe-corp.net", 10, "mx.probe-corp.net")
	strict.DNS.AddA("mx.probe-corp.net", "127.0.0.1")
	w := strict.NewUser("carol")
	r := strict.Do(apitest.Request{Method: "POST", Path: "/api/email/validate", Auth: w.Auth(),
		Body: map[string]any{"email": "ok@probe-corp.net", "check_mailbox": true}}).JSON["data"].(map[string]any)
	if r["deliverability"] != "undeliverable" || fmt.Sprint(r["deliverability_reasons"]) != "[no_mail_server]" || r["mailbox"].(map[string]any)["outcome"] != "private" {
		t.Errorf("a loopback MX without --validation-probe-allow-private: %v", r)
	}

	off := apitest.Start(t, store.SQLite, nil)
	v := off.NewUser("bob")
	if r := off.Do(apitest.Request{Method: "POST", Path: "/api/email/validate", Auth: v.Auth(),
		Body: map[string]any{"email": "ok@probe-corp.net", "check_mailbox": true}}); r.StatusCode != 422 || !strings.Contains(string(r.Body), "--validation-smtp-probe") {
		t.Errorf("check_mailbox on a server that does not probe: %d %s", r.StatusCode, r.Body)
	}
	if r := off.Do(apitest.Request{Method: "POST", Path: "/api/email/validate/jobs", Auth: v.Auth(),
		Body: map[string]any{"emails": []string{"a@probe-corp.net"}, "check_mailbox": true}}); r.StatusCode != 422 {
		t.Errorf("a probing job on a server that does not probe: %d %s", r.StatusCode, r.Body)
	}
}

// TestMailboxProbeEndlessReply: an MX whose EHLO reply never ends (any
// tenant can have Postline probe an address at such a domain) is given up
// after a bounded reply, at once, not read and joined until the probe's
// deadline; the verdict is smtp_unavailable.
func TestMailboxProbeEndlessReply(t *testing.T) {
	t.Parallel()
	ln, err := net.Listen("tcp", "127.0.0.4:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	held := make(chan time.Duration, 10)
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				start := time.Now()
				fmt.Fprint(c, "220 endless.test ESMTP\r\n")
				buf := make([]byte, 512)
				if _, err := c.Read(buf); err != nil {
					return
				}
				line := "250-" + strings.Repeat("x", 996) + "\r\n"
				for {
					if _, err := fmt.Fprint(c, line); err != nil {
						held <- time.Since(start)
						return
					}
				}
			}()
		}
	}()
	env := apitest.Start(t, store.SQLite, func(c *config.Config) {
		c.MXPort = ln.Addr().(*net.TCPAddr).Port
		c.ValidationSMTPProbe, c.ValidationHelo, c.ValidationProbeAllowPrivate = true, "probe.postline.test", true
		c.ValidationProbeTimeout = 3 * time.Second
	})
	env.DNS.AddMX("endless-corp.net", 10, "mx.endless-corp.net")
	env.DNS.AddA("mx.endless-corp.net", "127.0.0.4")
	u := env.NewUser("alice")
	resp := env.Do(apitest.Request{Method: "POST", Path: "/api/email/validate", Auth: u.Auth(),
		Body: map[string]any{"email": "x@endless-corp.net", "check_mailbox": true}})
	if resp.StatusCode != 200 {
		t.Fatalf("validate: %d %s", resp.StatusCode, resp.Body)
	}
	if reasons := fmt.Sprint(resp.JSON["data"].(map[string]any)["deliverability_reasons"]); reasons != "[smtp_unavailable]" {
		t.Errorf("deliverability_reasons %s, want [smtp_unavailable]", reasons)
	}
	select {
	case d := <-held:
		if d > time.Second {
			t.Errorf("the probe held the endless MX's connection %v; want it given up after a bounded reply", d)
		}
	case <-time.After(10 * time.Second):
		t.Error("the probe never hung up on the endless MX")
	}
}
