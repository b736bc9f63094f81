package app_test

import (
	"bytes"
	"context"
	"fmt"
	"mime/multipart"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/emersion/go-smtp"

	"github.com/postline/postline/internal/app"
	"github.com/postline/postline/internal/config"
	"github.com/postline/postline/internal/dnstest"
	"github.com/postline/postline/internal/domain"
	"github.com/postline/postline/internal/message"
	"github.com/postline/postline/internal/smtptest"
	"github.com/postline/postline/internal/store"
	"github.com/postline/postline/internal/testutil"
)

// benchApp opens an App (no workers yet) with a verified relay domain
// pointing at a local sink, and an HTTP server over its API.
func benchApp(b *testing.B, d store.Dialect, sink *smtptest.Sink) (*app.App, *httptest.Server, string) {
	return benchAppWith(b, d, sink, nil)
}

// benchAppWith is benchApp with edit applied to the configuration.
func benchAppWith(b *testing.B, d store.Dialect, sink *smtptest.Sink, edit func(*config.Config)) (*app.App, *httptest.Server, string) {
	dns := dnstest.New(b)
	cfg := config.Default()
	cfg.DataDir = b.TempDir()
	cfg.DatabaseURL = testutil.DatabaseURL(b, d)
	if d == store.SQLite {
		cfg.DatabaseURL = "sqlite:" + filepath.Join(cfg.DataDir, "postline.db")
	}
	cfg.DNSServer = dns.Addr()
	cfg.RateDomainPerMinute = 1 << 30
	cfg.DeliveryWorkers = benchWorkers()
	if edit != nil {
		edit(&cfg)
	}
	a, err := app.Open(context.Background(), cfg, nil, app.Options{DKIMKeyBits: 2048})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { a.Close() })
	ctx := context.Background()
	if err := a.ListFollower.Start(ctx); err != nil { // as serve does
		b.Fatal(err)
	}
	b.Cleanup(a.ListFollower.Stop)
	acc, _ := a.Accounts.CreateUser(ctx, "bench")
	key, _, _ := a.Accounts.CreateKey(ctx, "bench", "")
	dom, err := a.Domains.Add(ctx, domain.AddParams{AccountID: acc.ID, Name: "shop.example.com", Trusted: true,
		Delivery: domain.Delivery{Mode: domain.ModeSMTP, Host: "127.0.0.1", Port: sink.Port(), TLS: domain.TLSNone}})
	if err != nil {
		b.Fatal(err)
	}
	a.Domains.Verify(ctx, dom, true)
	srv := httptest.NewServer(a.API().Handler())
	b.Cleanup(srv.Close)
	return a, srv, "bench:" + key
}

// postSend posts sendBody(i) to the benchmark domain's send endpoint with
// auth ("user:key"); an error unless it was accepted (202).
func postSend(base, auth string, i int) error {
	ct, body := sendBody(i)
	req, _ := http.NewRequest("POST", base+"/api/domains/shop.example.com/message", bytes.NewReader(body))
	req.Header.Set("Content-Type", ct)
	user, key, _ := strings.Cut(auth, ":")
	req.SetBasicAuth(user, key)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return err
	}
	resp.Body.Close()
	if resp.StatusCode != 202 {
		return fmt.Errorf("send %d: status %d", i, resp.StatusCode)
	}
	return nil
}

func sendBody(i int) (string, []byte) {
	var buf bytes.Buffer
	mw := multipart.NewWriter(&buf)
	mw.WriteField("from", "orders@shop.example.com")
	mw.WriteField("to", fmt.Sprintf("user%d@rcpt.example.net", i))
	mw.WriteField("subject", "Your order")
	mw.WriteField("text", strings.Repeat("Thank you for your order. ", 20))
	mw.WriteField("html", "<p>"+strings.Repeat("Thank you for your order. ", 20)+"</p>")
	mw.Close()
	return mw.FormDataContentType(), buf.Bytes()
}

// BenchmarkSendIntake measures API → committed jobs: multipart requests of
// one recipient each over loopback HTTP, 8 clients, no workers running.
//
//	POSTLINE_TEST_DATABASE_URL=... go test -run '^$' -bench BenchmarkSendIntake -benchtime 3000x ./internal/app/
func BenchmarkSendIntake(b *testing.B) {
	for _, d := range testutil.Dialects() {
		b.Run(string(d), func(b *testing.B) {
			sink := smtptest.New(b, smtptest.Config{})
			a, srv, auth := benchApp(b, d, sink)
			user, key, _ := strings.Cut(auth, ":")
			client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 16}}
			resetStatementStats(b, a, d)
			var n atomic.Int64
			b.SetParallelism(4)
			b.ResetTimer()
			cpu := processCPU() // this process: on PostgreSQL the server's work is not in it
			b.RunParallel(func(pb *testing.PB) {
				for pb.Next() {
					ct, body := sendBody(int(n.Add(1)))
					req, _ := http.NewRequest("POST", srv.URL+"/api/domains/shop.example.com/message", bytes.NewReader(body))
					req.Header.Set("Content-Type", ct)
					req.SetBasicAuth(user, key)
					resp, err := client.Do(req)
					if err != nil {
						b.Error(err)
						return
					}
					resp.Body.Close()
					if resp.StatusCode != 202 {
						b.Errorf("status %d", resp.StatusCode)
						return
					}
				}
			})
			b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "msgs/s")
			reportCPU(b, cpu)
		})
	}
}

// resetStatementStats clears pg_stat_statements before the timed part when
// bench/pg-statements.sh asks for it (a server of its own with the module
// preloaded), so what it prints is the intake alone.
func resetStatementStats(b *testing.B, a *app.App, d store.Dialect) {
	if d != store.Postgres || os.Getenv("POSTLINE_BENCH_RESET_STATEMENTS") == "" {
		return
	}
	if _, err := a.DB.SQL().Exec(`SELECT public.pg_stat_statements_reset()`); err != nil {
		b.Fatal(err)
	}
}

// BenchmarkDeliveryVsRawSMTP delivers b.N queued messages to a local sink
// with the workers (--delivery-workers' default, or
// POSTLINE_BENCH_WORKERS), and, in the same run, sends as many messages
// with a bare go-smtp client loop on as many connections: the ceiling of
// the sink.
// build-sign builds and DKIM-signs as many messages on all cores, with the
// benchmark domain's key and nothing else: the ceiling that signing alone
// puts on delivery, whatever the queue and the transport cost.
//
//	go test -run '^$' -bench BenchmarkDeliveryVsRawSMTP -benchtime 2000x ./internal/app/
func BenchmarkDeliveryVsRawSMTP(b *testing.B) {
	b.Run("postline", benchDelivery)
	b.Run("raw-go-smtp", func(b *testing.B) {
		sink := smtptest.New(b, smtptest.Config{})
		_, body := sendBody(0)
		var next atomic.Int64
		var wg sync.WaitGroup
		b.ResetTimer()
		for range benchWorkers() {
			wg.Add(1)
			go func() {
				defer wg.Done()
				c, err := smtp.Dial(sink.Addr())
				if err != nil {
					b.Error(err)
					return
				}
				defer c.Close()
				for next.Add(1) <= int64(b.N) {
					if err := c.SendMail("orders@shop.example.com", []string{"user@rcpt.example.net"}, bytes.NewReader(body)); err != nil {
						b.Error(err)
						return
					}
				}
			}()
		}
		wg.Wait()
		b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "msgs/s")
	})
	// The ceiling of delivery on these cores: what building, signing and a
	// raw go-smtp client loop reach together, with the worker's concurrency.
	b.Run("build-sign-send", func(b *testing.B) {
		sink := smtptest.New(b, smtptest.Config{})
		a, _, _ := benchApp(b, store.SQLite, sink)
		dom, err := a.Domains.Get(context.Background(), "shop.example.com")
		if err != nil {
			b.Fatal(err)
		}
		signer, err := message.NewSigner(dom.Name, dom.DKIMSelector, dom.DKIMPrivateKey)
		if err != nil {
			b.Fatal(err)
		}
		text := strings.Repeat("Thank you for your order. ", 20)
		var next atomic.Int64
		var wg sync.WaitGroup
		b.ResetTimer()
		cpu := processCPU()
		for range benchWorkers() {
			wg.Add(1)
			go func() {
				defer wg.Done()
				c, err := smtp.Dial(sink.Addr())
				if err != nil {
					b.Error(err)
					return
				}
				defer c.Close()
				for i := next.Add(1); i <= int64(b.N); i = next.Add(1) {
					to := fmt.Sprintf("user%d@rcpt.example.net", i)
					raw, err := message.Build(message.Params{From: "orders@shop.example.com", To: to,
						Subject: "Your order", Text: text, HTML: "<p>" + text + "</p>", MessageID: message.NewMessageID(dom.Name),
						Date: time.Now()})
					if err == nil {
						raw, err = signer.Sign(raw)
					}
					if err == nil {
						err = c.SendMail("orders@shop.example.com", []string{to}, bytes.NewReader(raw))
					}
					if err != nil {
						b.Error(err)
						return
					}
				}
			}()
		}
		wg.Wait()
		b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "msgs/s")
		reportCPU(b, cpu)
	})
	b.Run("build-sign", func(b *testing.B) {
		sink := smtptest.New(b, smtptest.Config{})
		a, _, _ := benchApp(b, store.SQLite, sink)
		dom, err := a.Domains.Get(context.Background(), "shop.example.com")
		if err != nil {
			b.Fatal(err)
		}
		signer, err := message.NewSigner(dom.Name, dom.DKIMSelector, dom.DKIMPrivateKey)
		if err != nil {
			b.Fatal(err)
		}
		text := strings.Repeat("Thank you for your order. ", 20)
		var n atomic.Int64
		b.ResetTimer()
		b.RunParallel(func(pb *testing.PB) {
			for pb.Next() {
				i := n.Add(1)
				raw, err := message.Build(message.Params{From: "orders@shop.example.com", To: fmt.Sprintf("user%d@rcpt.example.net", i),
					Subject: "Your order", Text: text, HTML: "<p>" + text + "</p>", MessageID: message.NewMessageID(dom.Name),
					Date: time.Now()})
				if err == nil {
					_, err = signer.Sign(raw)
				}
				if err != nil {
					b.Error(err)
					return
				}
			}
		})
		b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "msgs/s")
	})
}

// processCPU is the CPU time (user + system) this process has used.
func processCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// reportCPU reports the CPU time per message since since, and how many
// cores were busy on average: a run below the core count waited on
// something other than the processor.
func reportCPU(b *testing.B, since time.Duration) {
	used := processCPU() - since
	b.ReportMetric(float64(used.Microseconds())/float64(b.N), "cpu-µs/msg")
	b.ReportMetric(used.Seconds()/b.Elapsed().Seconds(), "cores")
}

// benchWorkers is the delivery concurrency of the delivery benchmarks:
// the default of --delivery-workers unless POSTLINE_BENCH_WORKERS says
// otherwise. The ceilings run with the same.
func benchWorkers() int {
	if n, err := strconv.Atoi(os.Getenv("POSTLINE_BENCH_WORKERS")); err == nil && n > 0 {
		return n
	}
	return config.Default().DeliveryWorkers
}

// benchDelivery queues b.N messages and times their delivery to a local sink.
func benchDelivery(b *testing.B) {
	sink := smtptest.New(b, smtptest.Config{})
	a, srv, auth := benchApp(b, store.SQLite, sink)
	for i := 0; i < b.N; i++ { // queue first, so only delivery is timed
		if err := postSend(srv.URL, auth, i); err != nil {
			b.Fatal(err)
		}
	}
	b.ResetTimer()
	cpu := processCPU()
	if err := a.StartWorkers(context.Background()); err != nil {
		b.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	if _, err := sink.WaitForMessages(ctx, b.N); err != nil {
		b.Fatal(err)
	}
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "msgs/s")
	reportCPU(b, cpu)
}
