package app_test

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/postline/postline/internal/apitest"
	"github.com/postline/postline/internal/config"
	"github.com/postline/postline/internal/smtptest"
	"github.com/postline/postline/internal/store"
)

// TestDeliveryMetrics: after a delivered message, a bounce, a webhook post
// and a validation, every metric the operator's dashboard uses has the
// expected sample, and every metric deploy/grafana-dashboard.json names is
// exported.
func TestDeliveryMetrics(t *testing.T) {
	t.Parallel()
	e := startSend(t, store.SQLite, false, func(c *config.Config) { c.WebhookAllowPrivate = true })
	scrape := func() string {
		return string(e.Do(apitest.Request{Method: "GET", Path: "/metrics"}).Body)
	}
	before := scrape()
	for _, series := range []string{`postline_queue_messages{state="queued"} 0`, `postline_queue_messages{state="deferred"} 0`,
		`postline_queue_messages{state="in_flight"} 0`, `postline_deliveries_total{outcome="bounced",tls="none",transport="direct"} 0`,
		`postline_webhook_posts_total{outcome="failed"} 0`, `postline_validation_cache_total{result="hit"} 0`,
		`postline_inbound_posts_total{outcome="posted"} 0`, `postline_inbound_posts_total{outcome="failed"} 0`,
		`postline_delivery_claims_total{result="failed"} 0`} {
		if !strings.Contains(before, series) {
			t.Errorf("at startup the metrics lack %s", series)
		}
	}

	hooks := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {}))
	defer hooks.Close()
	if r := e.Do(apitest.Request{Method: "POST", Path: "/api/domains/shop.example.com/webhooks", Auth: e.user.Auth(),
		Body: map[string]any{"url": hooks.URL}}); r.StatusCode != 201 {
		t.Fatalf("webhook: %d %s", r.StatusCode, r.Body)
	}
	e.sink.Script("gone@rcpt.example.net", smtptest.Reply{Code: 550, Enhanced: [3]int{5, 1, 1}, Message: "no such user"})
	for _, to := range []string{"ann@rcpt.example.net", "gone@rcpt.example.net"} {
		if r := e.send(t, basicParts(to), nil); r.StatusCode != 202 {
			t.Fatalf("send: %d %s", r.StatusCode, r.Body)
		}
	}
	e.DNS.AddMX("acme-mail.com", 10, "mx.acme-mail.com")
	if r := e.Do(apitest.Request{Method: "POST", Path: "/api/email/validate", Auth: e.user.Auth(),
		Body: map[string]string{"email": "jane@acme-mail.com"}}); r.StatusCode != 200 {
		t.Fatalf("validate: %d %s", r.StatusCode, r.Body)
	}

	want := map[string]float64{
		`postline_deliveries_total{outcome="delivered",tls="none",transport="direct"}`: 1,
		`postline_deliveries_total{outcome="bounced",tls="none",transport="direct"}`:   1,
		`postline_delivery_attempt_seconds_count{transport="direct"}`:                  2,
		`postline_dkim_sign_seconds_count`:                                             2,
		`postline_delivery_claims_total{result="claimed"}`:                             1,
		`postline_webhook_posts_total{outcome="ok"}`:                                   1,
		`postline_webhook_lag_seconds_count`:                                           1,
		`postline_validations_total{reason="",result="valid"}`:                         1,
		`postline_validation_cache_total{result="miss"}`:                               1,
		`postline_dns_lookup_seconds_count{outcome="ok",qtype="MX"}`:                   1,
		`go_sql_open_connections{db_name="writer"}`:                                    1,
	}
	var text string
	deadline := time.Now().Add(15 * time.Second)
	for {
		text = scrape()
		missing := ""
		for series, min := range want {
			if v, ok := sample(text, series); !ok || v < min {
				missing = series
				break
			}
		}
		if missing == "" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("metrics lack %s ≥ %v after a delivery, a bounce, a webhook post and a validation", missing, want[missing])
		}
		time.Sleep(100 * time.Millisecond)
	}

	raw, err := os.ReadFile("../../deploy/grafana-dashboard.json")
	if err != nil {
		t.Fatal(err)
	}
	var dash struct {
		Panels []struct {
			Title   string
			Targets []struct{ Expr string }
		}
	}
	if err := json.Unmarshal(raw, &dash); err != nil {
		t.Fatalf("the dashboard is not JSON: %v", err)
	}
	names := regexp.MustCompile(`\b(postline|go_sql)_[a-z_]+`)
	seen := 0
	for _, p := range dash.Panels {
		for _, tg := range p.Targets {
			for _, n := range names.FindAllString(tg.Expr, -1) {
				seen++
				base := strings.TrimSuffix(strings.TrimSuffix(strings.TrimSuffix(n, "_bucket"), "_count"), "_sum")
				if !strings.Contains(text, "# TYPE "+base+" ") {
					t.Errorf("panel %q uses %s, which the server does not export", p.Title, n)
				}
			}
		}
	}
	if seen < 10 {
		t.Fatalf("the dashboard names %d metrics; it should chart the queue, deliveries, webhooks, validation, DNS and pools", seen)
	}
}

// sample returns the value of one series (name with its labels as the
// exposition format writes them) in a /metrics text.
func sample(text, series string) (float64, bool) {
	for _, line := range strings.Split(text, "\n") {
		if rest, ok := strings.CutPrefix(line, series+" "); ok {
			v, err := strconv.ParseFloat(strings.TrimSpace(rest), 64)
			return v, err == nil
		}
	}
	return 0, false
}
