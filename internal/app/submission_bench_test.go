package app_test

import (
	"context"
	"crypto/tls"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/emersion/go-sasl"
	"github.com/emersion/go-smtp"

	"github.com/postline/postline/internal/ratelimit"
	"github.com/postline/postline/internal/smtptest"
	"github.com/postline/postline/internal/store"
	"github.com/postline/postline/internal/submission"
	"github.com/postline/postline/internal/testutil"
)

// BenchmarkSubmissionVsHTTP: messages accepted (committed, 250 or 202) per
// second over 8 parallel SMTP submission connections with STARTTLS and
// AUTH, against 8 HTTP clients posting the same message, in one run; no
// workers deliver meanwhile.
//
//	go test -run '^$' -bench BenchmarkSubmissionVsHTTP -benchtime 3000x ./internal/app/
func BenchmarkSubmissionVsHTTP(b *testing.B) {
	text := strings.Repeat("Thank you for your order. ", 20)
	b.Run("http", func(b *testing.B) {
		sink := smtptest.New(b, smtptest.Config{})
		_, srv, auth := benchApp(b, store.SQLite, sink)
		var next atomic.Int64
		var wg sync.WaitGroup
		b.ResetTimer()
		for range 8 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for i := next.Add(1); i <= int64(b.N); i = next.Add(1) {
					if err := postSend(srv.URL, auth, int(i)); err != nil {
						b.Error(err)
						return
					}
				}
			}()
		}
		wg.Wait()
		b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "msgs/s")
	})
	b.Run("smtp-starttls", func(b *testing.B) {
		sink := smtptest.New(b, smtptest.Config{})
		a, _, auth := benchApp(b, store.SQLite, sink)
		user, key, _ := strings.Cut(auth, ":")
		certPEM, keyPEM, _ := testutil.SelfSignedCert(b, "bench")
		pair, err := tls.X509KeyPair(certPEM, keyPEM)
		if err != nil {
			b.Fatal(err)
		}
		sub := submission.New(submission.Config{TLS: &tls.Config{Certificates: []tls.Certificate{pair}}},
			submission.Deps{Accounts: a.Accounts, Domains: a.Domains, Intake: a.Sending,
				Attempts: &ratelimit.Attempts{Limiter: a.Limiter}})
		if err := sub.Listen("127.0.0.1:0", false); err != nil {
			b.Fatal(err)
		}
		b.Cleanup(func() { sub.Shutdown(context.Background()) })
		var next atomic.Int64
		var wg sync.WaitGroup
		b.ResetTimer()
		for range 8 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				c, err := smtp.DialStartTLS(sub.Addr(false), &tls.Config{InsecureSkipVerify: true}) //nolint:gosec // loopback test certificate
				if err != nil {
					b.Error(err)
					return
				}
				defer c.Close()
				if err := c.Auth(sasl.NewPlainClient("", user, key)); err != nil {
					b.Error(err)
					return
				}
				for i := next.Add(1); i <= int64(b.N); i = next.Add(1) {
					to := fmt.Sprintf("user%d@rcpt.example.net", i)
					msg := "From: orders@shop.example.com\r\nTo: " + to + "\r\nSubject: Your order\r\nMIME-Version: 1.0\r\n" +
						"Content-Type: text/plain; charset=utf-8\r\n\r\n" + text + "\r\n"
					if err := c.SendMail("orders@shop.example.com", []string{to}, strings.NewReader(msg)); err != nil {
						b.Error(err)
						return
					}
				}
			}()
		}
		wg.Wait()
		b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "msgs/s")
	})
}
