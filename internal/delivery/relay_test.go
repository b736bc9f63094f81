package delivery_test

import (
	"crypto/tls"
	"testing"

	"github.com/postline/postline/internal/delivery"
	"github.com/postline/postline/internal/smtptest"
)

var creds = &smtptest.Credentials{User: "relay-user", Password: "s3cret"}

func TestRelay(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name     string
		tls      string // route TLS mode
		sinkTLS  bool   // sink offers STARTTLS
		auth     bool   // sink requires AUTH, route sends it
		verify   bool   // transport trusts the sink's certificate (else skips verification)
		host     string // relay host: "" for 127.0.0.1, else a name served by dnstest
		implicit bool   // a TLS front (SMTPS) before the sink
	}{
		{name: "plain", tls: delivery.TLSNone},
		{name: "plain with auth", tls: delivery.TLSNone, auth: true},
		{name: "starttls verified with auth", tls: delivery.TLSStartTLS, sinkTLS: true, auth: true, verify: true},
		{name: "starttls unverified", tls: delivery.TLSStartTLS, sinkTLS: true},
		{name: "default tls mode is starttls", tls: "", sinkTLS: true, verify: true},
		{name: "starttls by name", tls: delivery.TLSStartTLS, sinkTLS: true, verify: true, host: "relay.test"},
		{name: "none ignores offered starttls", tls: delivery.TLSNone, sinkTLS: true},
		{name: "implicit tls", tls: delivery.TLSImplicit, auth: true, verify: true, implicit: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			cert := smtptest.SelfSignedTLS(t, "relay.test")
			sc := smtptest.Config{}
			if tt.sinkTLS {
				sc.TLS = cert
			}
			if tt.auth {
				sc.Auth = creds
			}
			f := setup(t, sc, func(c *delivery.Config) {
				if tt.verify {
					c.TLSConfig = &tls.Config{RootCAs: cert.RootCAs}
				} else {
					c.InsecureSkipRelayVerify = true
				}
			})
			r := f.relay()
			r.TLS = tt.tls
			if tt.host != "" {
				f.dns.AddA(tt.host, "127.0.0.1")
				r.Host = tt.host
			}
			if tt.implicit {
				r.Port = newProxy(t, f.sink.Addr(), cert).Port()
			}
			if tt.auth {
				r.User, r.Password = creds.User, creds.Password
			}
			res, err := f.send(t, r, "rcpt@example.test")
			if err != nil {
				t.Fatalf("Send: %v", err)
			}
			wantTLS := tt.sinkTLS && tt.tls != delivery.TLSNone || tt.implicit
			wantHost := "127.0.0.1"
			if tt.host != "" {
				wantHost = tt.host
			}
			if res.Code != 250 || (res.TLS.Version != "") != wantTLS || res.Host != wantHost || res.Reused {
				t.Errorf("Result = %+v, want Code 250, TLS %v, Host %s, not reused", res, wantTLS, wantHost)
			}
			// A relay's outcome has the same shape as an MX's: verified
			// unless verification is off, never under a policy.
			if res.TLS.Verified != (wantTLS && tt.verify) || res.TLS.Policy != delivery.PolicyNone ||
				wantTLS && res.TLS.Version != "TLS1.3" {
				t.Errorf("Result.TLS = %+v, want TLS1.3 %v, verified %v, policy none", res.TLS, wantTLS, wantTLS && tt.verify)
			}
			msgs := f.sink.Messages()
			if len(msgs) != 1 {
				t.Fatalf("sink got %d messages, want 1", len(msgs))
			}
			m := msgs[0]
			wantUser := ""
			if tt.auth {
				wantUser = creds.User
			}
			if m.TLS != (wantTLS && !tt.implicit) || m.AuthUser != wantUser || m.Helo != "postline.test" ||
				m.From != "a@sender.test" || len(m.To) != 1 || m.To[0] != "rcpt@example.test" || string(m.Data) != testMsg {
				t.Errorf("sink got %+v (data %q), want TLS %v, auth %q, helo postline.test, the envelope and data",
					m, m.Data, wantTLS && !tt.implicit, wantUser)
			}
		})
	}
}

func TestRelayFailures(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name      string
		sc        func(cert *tls.Config) smtptest.Config
		route     func(r *delivery.Route)
		wantCode  int
		wantEnh   string
		wantStage string
		wantTemp  bool
	}{
		{
			name:  "wrong password",
			sc:    func(*tls.Config) smtptest.Config { return smtptest.Config{Auth: creds} },
			route: func(r *delivery.Route) { r.User, r.Password = creds.User, "wrong" },
			// go-smtp's ErrAuthFailed: 535 5.7.8
			wantCode: 535, wantEnh: "5.7.8", wantStage: delivery.StageAuth,
		},
		{
			name:    "starttls required but not offered",
			sc:      func(*tls.Config) smtptest.Config { return smtptest.Config{} },
			route:   func(r *delivery.Route) { r.TLS = delivery.TLSStartTLS },
			wantEnh: "4.7.10", wantStage: delivery.StageTLS, wantTemp: true,
		},
		{
			name:    "untrusted certificate",
			sc:      func(c *tls.Config) smtptest.Config { return smtptest.Config{TLS: c} },
			route:   func(r *delivery.Route) { r.TLS = delivery.TLSStartTLS },
			wantEnh: "4.7.5", wantStage: delivery.StageTLS, wantTemp: true,
		},
		{
			name:    "auth not offered",
			sc:      func(*tls.Config) smtptest.Config { return smtptest.Config{} },
			route:   func(r *delivery.Route) { r.User, r.Password = "u", "p" },
			wantEnh: "4.7.0", wantStage: delivery.StageAuth, wantTemp: true,
		},
		{
			name:    "relay name does not resolve",
			sc:      func(*tls.Config) smtptest.Config { return smtptest.Config{} },
			route:   func(r *delivery.Route) { r.Host = "nowhere.test" },
			wantEnh: "4.4.4", wantStage: delivery.StageDNS, wantTemp: true,
		},
		{
			name:    "invalid tls mode",
			sc:      func(*tls.Config) smtptest.Config { return smtptest.Config{} },
			route:   func(r *delivery.Route) { r.TLS = "ssl" },
			wantEnh: "5.3.5", wantStage: delivery.StageConnect,
		},
		{
			name:    "connection refused",
			sc:      func(*tls.Config) smtptest.Config { return smtptest.Config{} },
			route:   func(r *delivery.Route) { r.Host = "127.0.0.2" }, // nothing listens there
			wantEnh: "4.4.1", wantStage: delivery.StageConnect, wantTemp: true,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			cert := smtptest.SelfSignedTLS(t) // trusted only when verify is false
			f := setup(t, tt.sc(cert))
			r := f.relay()
			tt.route(&r)
			_, err := f.send(t, r, "rcpt@example.test")
			e := asError(t, err)
			if e.Code != tt.wantCode || e.Enhanced != tt.wantEnh || e.Stage != tt.wantStage ||
				e.Temporary != tt.wantTemp || e.RecipientRejected() {
				t.Errorf("error %v = %+v, want Code %d, Enhanced %s, Stage %s, Temporary %v, not RecipientRejected",
					e, *e, tt.wantCode, tt.wantEnh, tt.wantStage, tt.wantTemp)
			}
			if n := len(f.sink.Messages()); n != 0 {
				t.Errorf("sink got %d messages, want none", n)
			}
		})
	}
}
