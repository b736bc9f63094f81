package delivery_test

import (
	"context"
	"testing"
	"time"

	"github.com/emersion/go-smtp"
	"github.com/postline/postline/internal/delivery"
	"github.com/postline/postline/internal/smtptest"
)

// BenchmarkSendToSink measures Send to one sink with connection reuse: the
// transport's overhead (pool, deadlines, classification) on top of the
// four round trips of MAIL, RCPT, DATA and the final dot.
func BenchmarkSendToSink(b *testing.B) {
	f := setup(b, smtptest.Config{}, func(c *delivery.Config) { c.MaxConnsPerDest = 1 })
	r := f.relay()
	env := delivery.Envelope{From: "a@sender.test", To: "rcpt@example.test"}
	msg := []byte(testMsg)
	ctx := context.Background()
	b.ReportAllocs()
	b.ResetTimer()
	start := time.Now()
	n := 0
	for b.Loop() {
		if _, err := f.tr.Send(ctx, r, env, msg); err != nil {
			b.Fatal(err)
		}
		n++
	}
	b.ReportMetric(float64(n)/time.Since(start).Seconds(), "msgs/s")
	if s := f.sessions(); s != 1 {
		b.Errorf("sink saw %d sessions, want 1", s)
	}
}

// BenchmarkRawGoSMTP is the baseline: a go-smtp client dialled once,
// sending the same message repeatedly on one connection.
func BenchmarkRawGoSMTP(b *testing.B) {
	f := setup(b, smtptest.Config{})
	c, err := smtp.Dial(f.sink.Addr())
	if err != nil {
		b.Fatal(err)
	}
	defer c.Close()
	if err := c.Hello("postline.test"); err != nil {
		b.Fatal(err)
	}
	msg := []byte(testMsg)
	b.ReportAllocs()
	b.ResetTimer()
	start := time.Now()
	n := 0
	for b.Loop() {
		if err := c.Mail("a@sender.test", nil); err != nil {
			b.Fatal(err)
		}
		if err := c.Rcpt("rcpt@example.test", nil); err != nil {
			b.Fatal(err)
		}
		w, err := c.Data()
		if err != nil {
			b.Fatal(err)
		}
		if _, err := w.Write(msg); err != nil {
			b.Fatal(err)
		}
		if err := w.Close(); err != nil {
			b.Fatal(err)
		}
		n++
	}
	b.ReportMetric(float64(n)/time.Since(start).Seconds(), "msgs/s")
}
