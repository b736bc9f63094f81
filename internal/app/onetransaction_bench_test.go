package app_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/postline/postline/internal/config"
	"github.com/postline/postline/internal/sending"
	"github.com/postline/postline/internal/smtptest"
	"github.com/postline/postline/internal/store"
	"github.com/postline/postline/internal/testutil"
)

// BenchmarkOneMessageManyRecipients: b.N recipients of one message
// queued as SMTP submission queues it (a raw message, 1000 recipients a
// message: the intake's bound), then delivered through a relay (the
// smtptest sink) with max_recipients_per_transaction at its default (50:
// one signature and one transaction for up to 50 recipients) and at 1
// (each recipient alone, as before), in one run. Reported: recipients
// delivered (and recorded) per second, this process's CPU per recipient,
// and the transactions the sink saw.
//
//	go test -run '^$' -bench BenchmarkOneMessageManyRecipients -benchtime 5000x ./internal/app/
func BenchmarkOneMessageManyRecipients(b *testing.B) {
	for _, d := range testutil.Dialects() {
		for _, c := range []struct {
			name  string
			limit int // 0: no shaping file, the default
		}{{"rcpts-per-txn-50", 0}, {"rcpts-per-txn-1", 1}} {
			b.Run(string(d)+"/"+c.name, func(b *testing.B) { benchManyRecipients(b, d, c.limit, 1000) })
		}
	}
}

// benchManyRecipients is one run of BenchmarkOneMessageManyRecipients:
// b.N recipients in messages of perMessage each; limit 0 leaves
// max_recipients_per_transaction at its default.
func benchManyRecipients(b *testing.B, d store.Dialect, limit, perMessage int) {
	sink := smtptest.New(b, smtptest.Config{})
	a, _, _ := benchAppWith(b, d, sink, func(cfg *config.Config) {
		if limit > 0 {
			p := filepath.Join(b.TempDir(), "shaping.toml")
			os.WriteFile(p, fmt.Appendf(nil, "[\"default\"]\nmax_recipients_per_transaction = %d\n", limit), 0o600)
			cfg.ShapingFiles = []string{p}
		}
	})
	ctx := context.Background()
	dom, err := a.Domains.Get(ctx, "shop.example.com")
	if err != nil {
		b.Fatal(err)
	}
	text := "Thank you for your order. "
	for i := 0; i < 20; i++ {
		text += "Thank you for your order. "
	}
	for start := 0; start < b.N; start += perMessage {
		var rcpts []string
		for i := start; i < min(b.N, start+perMessage); i++ {
			rcpts = append(rcpts, fmt.Sprintf("user%d@rcpt%d.example.net", i, i%3))
		}
		id := fmt.Sprintf("bench-%d@shop.example.com", start)
		data := "From: orders@shop.example.com\r\nTo: Customers <orders@shop.example.com>\r\nSubject: Your order\r\n" +
			"Message-ID: <" + id + ">\r\nDate: Fri, 27 Nov 2026 12:00:00 +0000\r\nMIME-Version: 1.0\r\n" +
			"Content-Type: text/plain; charset=utf-8\r\n\r\n" + text + "\r\n"
		if _, err := a.Sending.AcceptRaw(ctx, dom, dom.AccountID, sending.RawMessage{From: "orders@shop.example.com",
			Recipients: rcpts, Data: []byte(data), MessageID: id, Subject: "Your order"}); err != nil {
			b.Fatal(err)
		}
	}
	b.ResetTimer()
	cpu := processCPU()
	if err := a.StartWorkers(ctx); err != nil {
		b.Fatal(err)
	}
	deadline := time.Now().Add(10 * time.Minute)
	for {
		var left int
		if err := a.DB.Reader().QueryRowContext(ctx, `SELECT COUNT(*) FROM deliveries WHERE state <> 'delivered'`).Scan(&left); err != nil {
			b.Fatal(err)
		}
		if left == 0 {
			break
		}
		if time.Now().After(deadline) {
			b.Fatalf("%d of %d recipients not delivered in time", left, b.N)
		}
		time.Sleep(10 * time.Millisecond)
	}
	b.StopTimer()
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "rcpts/s")
	used := processCPU() - cpu
	b.ReportMetric(float64(used.Microseconds())/float64(b.N), "cpu-µs/rcpt")
	b.ReportMetric(used.Seconds()/b.Elapsed().Seconds(), "cores")
	msgs := sink.Messages()
	got := 0
	for _, m := range msgs {
		got += len(m.To)
	}
	if got != b.N {
		b.Fatalf("the sink got %d recipients, want %d", got, b.N)
	}
	b.ReportMetric(float64(len(msgs)), "txns")
}

// BenchmarkOneRecipientMessages: what grouping costs where there is
// nothing to group: b.N raw messages of one recipient each (the usual SMTP
// submission), delivered with max_recipients_per_transaction at its
// default and at 1, in one run.
//
//	go test -run '^$' -bench BenchmarkOneRecipientMessages -benchtime 3000x ./internal/app/
func BenchmarkOneRecipientMessages(b *testing.B) {
	for _, d := range testutil.Dialects() {
		b.Run(string(d)+"/rcpts-per-txn-50", func(b *testing.B) { benchManyRecipients(b, d, 0, 1) })
		b.Run(string(d)+"/rcpts-per-txn-1", func(b *testing.B) { benchManyRecipients(b, d, 1, 1) })
	}
}
