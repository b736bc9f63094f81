package app_test

import (
	"context"
	"crypto/sha256"
	"crypto/x509"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/postline/postline/internal/apitest"
	"github.com/postline/postline/internal/app"
	"github.com/postline/postline/internal/config"
	"github.com/postline/postline/internal/event"
	"github.com/postline/postline/internal/mtasts/mtaststest"
	"github.com/postline/postline/internal/smtptest"
	"github.com/postline/postline/internal/store"
)

// TestOutboundTLSPolicy: through the server, on both stores, a direct
// delivery's TLS outcome reaches its log entries, the webhook payload and
// the metric; an MTA-STS policy in enforce mode refuses an MX it does not
// list (deferred, naming MTA-STS) and its policy is cached in the
// database; DANE authenticates a certificate by its TLSA record.
func TestOutboundTLSPolicy(t *testing.T) {
	t.Parallel()
	forEachDialect(t, func(t *testing.T, d store.Dialect) {
		ca := smtptest.NewCA(t)
		sinkTLS := ca.ServerTLS(t, "mx.rcpt.example.net", "mx.other-rcpt.net", "mx.dane.example.net")
		web := mtaststest.New(t, ca)
		e := startSendSink(t, d, false, func(c *config.Config) {
			c.MTASTSPort = web.Port()
			c.WebhookAllowPrivate = true
			c.RetrySchedule = []time.Duration{time.Hour} // one deferral is enough to look at
		}, app.Options{RootCAs: ca.Pool()}, smtptest.Config{TLS: sinkTLS})

		// rcpt.example.net enforces a policy listing its MX; other-rcpt.net
		// one that does not; dane.example.net publishes a TLSA record.
		for dom, mx := range map[string]string{"rcpt.example.net": "mx.rcpt.example.net", "other-rcpt.net": "mx.elsewhere.example"} {
			e.DNS.AddTXT("_mta-sts."+dom, "v=STSv1; id=2026120101;")
			e.DNS.AddA("mta-sts."+dom, "127.0.0.1")
			web.SetPolicy(dom, "version: STSv1\r\nmode: enforce\r\nmx: "+mx+"\r\nmax_age: 86400\r\n")
		}
		leaf, err := x509.ParseCertificate(sinkTLS.Certificates[0].Certificate[0])
		if err != nil {
			t.Fatal(err)
		}
		spki := sha256.Sum256(leaf.RawSubjectPublicKeyInfo)
		e.DNS.AddMX("dane.example.net", 10, "mx.dane.example.net")
		e.DNS.AddA("mx.dane.example.net", "127.0.0.1")
		tlsa := "_" + strconv.Itoa(e.sink.Port()) + "._tcp.mx.dane.example.net"
		e.DNS.AddTLSA(tlsa, 3, 1, 1, spki[:])
		e.DNS.SetAuthenticated(tlsa, true)
		e.DNS.SetAuthenticated("dane.example.net", true) // the MX answer too (RFC 7672 §2.2.1)

		hooks := &rawHooks{}
		srv := httptest.NewServer(hooks)
		defer srv.Close()
		if r := e.Do(apitest.Request{Method: "POST", Path: "/api/domains/shop.example.com/webhooks", Auth: e.user.Auth(),
			Body: map[string]any{"url": srv.URL}}); r.StatusCode != 201 {
			t.Fatalf("webhook: %d %s", r.StatusCode, r.Body)
		}
		for _, to := range []string{"ann@rcpt.example.net", "bob@other-rcpt.net", "cy@dane.example.net"} {
			if r := e.send(t, basicParts(to), nil); r.StatusCode != 202 {
				t.Fatalf("send to %s: %d %s", to, r.StatusCode, r.Body)
			}
		}
		e.chain(t, "ann@rcpt.example.net", event.Delivered)
		e.chain(t, "bob@other-rcpt.net", event.Deferred)
		e.chain(t, "cy@dane.example.net", event.Delivered)

		tlsOf := func(rcpt string, typ event.Type) map[string]any {
			t.Helper()
			entries := e.entries(t, rcpt, typ)
			if len(entries) == 0 {
				t.Fatalf("%s has no %s entry", rcpt, typ)
			}
			m, ok := det(entries[0])("tls").(map[string]any)
			if !ok {
				t.Fatalf("%s %s: details.tls = %v, want an object", rcpt, typ, det(entries[0])("tls"))
			}
			return m
		}
		wantTLS := func(got map[string]any, version any, verified bool, policy string) {
			t.Helper()
			if got["version"] != version || got["verified"] != verified || got["policy"] != policy {
				t.Errorf("details.tls = %v, want version %v, verified %v, policy %s", got, version, verified, policy)
			}
		}
		wantTLS(tlsOf("ann@rcpt.example.net", event.Delivered), "TLS1.3", true, "mta-sts")
		wantTLS(tlsOf("cy@dane.example.net", event.Delivered), "TLS1.3", true, "dane")
		wantTLS(tlsOf("bob@other-rcpt.net", event.TemporaryFail), nil, false, "mta-sts")
		fail := e.entries(t, "bob@other-rcpt.net", event.TemporaryFail)[0]
		if msg, _ := det(fail)("smtp_message").(string); !strings.Contains(msg, "MTA-STS policy of other-rcpt.net (enforce)") ||
			det(fail)("enhanced_code") != "4.7.5" {
			t.Errorf("temporary_fail details = %s, want 4.7.5 naming the MTA-STS policy", fail.Details)
		}
		for _, m := range e.sink.Messages() {
			if strings.Contains(strings.Join(m.To, ","), "other-rcpt.net") {
				t.Errorf("the sink received %v, which the policy refuses", m.To)
			}
		}

		// The policies are in the database, under their ids.
		c, ok, err := store.NewMTASTSPolicies(e.App.DB).LoadPolicy(context.Background(), "rcpt.example.net")
		if err != nil || !ok || c.ID != "2026120101" || !strings.Contains(c.Body, "mode: enforce") {
			t.Errorf("cached policy of rcpt.example.net = %+v, %v, %v; want id 2026120101, enforce", c, ok, err)
		}

		// The webhook payload carries the same object.
		deadline := time.Now().Add(15 * time.Second)
		for {
			got := hooks.tlsOf("ann@rcpt.example.net", "delivered")
			if got != nil {
				wantTLS(got, "TLS1.3", true, "mta-sts")
				break
			}
			if time.Now().After(deadline) {
				t.Fatal("no webhook post carried ann's delivered event")
			}
			time.Sleep(50 * time.Millisecond)
		}

		text := string(e.Do(apitest.Request{Method: "GET", Path: "/metrics"}).Body)
		for _, series := range []string{`postline_deliveries_total{outcome="delivered",tls="mta-sts",transport="direct"} 1`,
			`postline_deliveries_total{outcome="delivered",tls="dane",transport="direct"} 1`,
			`postline_deliveries_total{outcome="deferred",tls="none",transport="direct"} 1`} {
			if !strings.Contains(text, series) {
				t.Errorf("metrics lack %s", series)
			}
		}
	})
}

// rawHooks keeps the events webhooks post.
type rawHooks struct {
	mu     sync.Mutex
	events []map[string]any
}

func (h *rawHooks) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	var p struct {
		Events []map[string]any `json:"events"`
	}
	json.Unmarshal(body, &p)
	h.mu.Lock()
	h.events = append(h.events, p.Events...)
	h.mu.Unlock()
}

// tlsOf is details.tls of recipient's first posted event of type typ.
func (h *rawHooks) tlsOf(recipient, typ string) map[string]any {
	h.mu.Lock()
	defer h.mu.Unlock()
	for _, ev := range h.events {
		if ev["recipient"] == recipient && ev["event_type"] == typ {
			details, _ := ev["details"].(map[string]any)
			m, _ := details["tls"].(map[string]any)
			return m
		}
	}
	return nil
}
