package delivery_test

import (
	"crypto/tls"
	"testing"

	"github.com/miekg/dns"
	"github.com/postline/postline/internal/delivery"
	"github.com/postline/postline/internal/dnstest"
	"github.com/postline/postline/internal/smtptest"
)

var direct = delivery.Route{Mode: delivery.ModeDirect}

func TestDirect(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name     string
		zone     func(s *dnstest.Server)
		sinkTLS  bool
		oldTLS   bool // the sink speaks only TLS 1.1, which the client refuses
		wantHost string
		wantTLS  bool
	}{
		{
			name: "mx",
			zone: func(s *dnstest.Server) {
				s.AddMX("example.test", 10, "mx.example.test")
				s.AddA("mx.example.test", "127.0.0.1")
			},
			wantHost: "mx.example.test",
		},
		{
			name: "opportunistic starttls, certificate not verified",
			zone: func(s *dnstest.Server) {
				s.AddMX("example.test", 10, "mx.example.test")
				s.AddA("mx.example.test", "127.0.0.1")
			},
			sinkTLS:  true,
			wantHost: "mx.example.test",
			wantTLS:  true,
		},
		{
			name: "plain text after a failed starttls handshake",
			zone: func(s *dnstest.Server) {
				s.AddMX("example.test", 10, "mx.example.test")
				s.AddA("mx.example.test", "127.0.0.1")
			},
			sinkTLS:  true,
			oldTLS:   true,
			wantHost: "mx.example.test",
		},
		{
			name:     "implicit mx (RFC 5321 §5.1)",
			zone:     func(s *dnstest.Server) { s.AddA("example.test", "127.0.0.1") },
			wantHost: "example.test",
		},
		{
			name: "fallback to the next mx when the first refuses connections",
			zone: func(s *dnstest.Server) {
				s.AddMX("example.test", 10, "mx1.example.test")
				s.AddMX("example.test", 20, "mx2.example.test")
				s.AddA("mx1.example.test", "127.0.0.2") // loopback, nothing listens
				s.AddA("mx2.example.test", "127.0.0.1")
			},
			wantHost: "mx2.example.test",
		},
		{
			name: "fallback past an mx without addresses",
			zone: func(s *dnstest.Server) {
				s.AddMX("example.test", 10, "gone.example.test")
				s.AddMX("example.test", 20, "mx2.example.test")
				s.AddA("mx2.example.test", "127.0.0.1")
			},
			wantHost: "mx2.example.test",
		},
		{
			name: "next address of the same mx",
			zone: func(s *dnstest.Server) {
				s.AddMX("example.test", 10, "mx.example.test")
				s.AddA("mx.example.test", "127.0.0.2")
				s.AddA("mx.example.test", "127.0.0.1")
			},
			wantHost: "mx.example.test",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			sc := smtptest.Config{}
			if tt.sinkTLS {
				sc.TLS = smtptest.SelfSignedTLS(t) // not for mx.example.test, and not trusted
			}
			if tt.oldTLS {
				sc.TLS.MinVersion, sc.TLS.MaxVersion = tls.VersionTLS10, tls.VersionTLS11
			}
			f := setup(t, sc)
			tt.zone(f.dns)
			res, err := f.send(t, direct, "rcpt@example.test")
			if err != nil {
				t.Fatalf("Send: %v", err)
			}
			if res.Host != tt.wantHost || (res.TLS.Version != "") != tt.wantTLS || res.Code != 250 {
				t.Errorf("Result = %+v, want Host %s, TLS %v, Code 250", res, tt.wantHost, tt.wantTLS)
			}
			// The default (OpportunisticInsecure, no policy) checks no
			// certificate.
			if res.TLS.Verified || res.TLS.Policy != delivery.PolicyNone || res.TLS.Report != "" {
				t.Errorf("Result.TLS = %+v, want unverified, policy none, no report", res.TLS)
			}
			msgs := f.sink.Messages()
			if len(msgs) != 1 || msgs[0].To[0] != "rcpt@example.test" || msgs[0].TLS != tt.wantTLS {
				t.Errorf("sink got %+v, want one message to rcpt@example.test, TLS %v", msgs, tt.wantTLS)
			}
			wantSessions := 1
			if tt.oldTLS {
				wantSessions = 2 // the failed handshake, then plain text
			}
			if n := f.sessions(); n != wantSessions {
				t.Errorf("sink saw %d sessions, want %d", n, wantSessions)
			}
		})
	}
}

func TestDirectFailures(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name         string
		zone         func(s *dnstest.Server)
		wantEnh      string
		wantStage    string
		wantTemp     bool
		wantRejected bool
	}{
		{
			name:    "null mx (RFC 7505)",
			zone:    func(s *dnstest.Server) { s.AddMX("example.test", 0, ".") },
			wantEnh: "5.1.10", wantStage: delivery.StageDNS, wantRejected: true,
		},
		{
			name:    "nxdomain",
			zone:    func(s *dnstest.Server) {},
			wantEnh: "5.1.2", wantStage: delivery.StageDNS, wantRejected: true,
		},
		{
			name:    "no mx and no address",
			zone:    func(s *dnstest.Server) { s.AddTXT("example.test", "v=spf1 -all") },
			wantEnh: "5.1.2", wantStage: delivery.StageDNS, wantRejected: true,
		},
		{
			name:    "servfail",
			zone:    func(s *dnstest.Server) { s.SetRcode("example.test", dns.RcodeServerFailure) },
			wantEnh: "4.4.3", wantStage: delivery.StageDNS, wantTemp: true,
		},
		{
			name: "mx without addresses",
			zone: func(s *dnstest.Server) { s.AddMX("example.test", 10, "gone.example.test") },
			// unable to route: permanent, but not the recipient's fault
			wantEnh: "5.4.4", wantStage: delivery.StageDNS,
		},
		{
			name: "every mx refuses connections",
			zone: func(s *dnstest.Server) {
				s.AddMX("example.test", 10, "mx1.example.test")
				s.AddMX("example.test", 20, "mx2.example.test")
				s.AddA("mx1.example.test", "127.0.0.2")
				s.AddA("mx2.example.test", "127.0.0.3")
			},
			wantEnh: "4.4.1", wantStage: delivery.StageConnect, wantTemp: true,
		},
		{
			name: "temporary failure of the primary wins over a dangling backup",
			zone: func(s *dnstest.Server) {
				s.AddMX("example.test", 10, "mx1.example.test")
				s.AddMX("example.test", 20, "gone.example.test")
				s.AddA("mx1.example.test", "127.0.0.2")
			},
			wantEnh: "4.4.1", wantStage: delivery.StageConnect, wantTemp: true,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			f := setup(t, smtptest.Config{})
			tt.zone(f.dns)
			_, err := f.send(t, direct, "rcpt@example.test")
			e := asError(t, err)
			if e.Code != 0 || e.Enhanced != tt.wantEnh || e.Stage != tt.wantStage || e.Temporary != tt.wantTemp ||
				e.RecipientRejected() != tt.wantRejected {
				t.Errorf("error %v = %+v, want Enhanced %s, Stage %s, Temporary %v, RecipientRejected %v",
					e, *e, tt.wantEnh, tt.wantStage, tt.wantTemp, tt.wantRejected)
			}
			if n := f.sessions(); n != 0 {
				t.Errorf("sink saw %d sessions, want none", n)
			}
		})
	}
}
