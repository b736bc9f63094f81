package app_test

import (
	"context"
	"fmt"
	"net/http"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/postline/postline/internal/event"
	"github.com/postline/postline/internal/inbound"
	"github.com/postline/postline/internal/sending"
	"github.com/postline/postline/internal/smtptest"
	"github.com/postline/postline/internal/store"
	"github.com/postline/postline/internal/testutil"
	"github.com/postline/postline/internal/tracking"
)

// trackingFixture queues one send of n deliveries whose HTML has links,
// and returns the delivery ids.
func trackingFixture(b *testing.B, st store.Sending, domainID, accountID int64, n int) []int64 {
	snd := sending.Send{DomainID: domainID, AccountID: accountID, From: "orders@shop.example.com", Subject: "News",
		Text: "t", HTML: `<p>News</p><a href="https://landing.example/a">a</a><a href="https://landing.example/b">b</a>`,
		CreatedAt: time.Now()}
	ds := make([]sending.Delivery, n)
	for i := range ds {
		ds[i] = sending.Delivery{DomainID: domainID, MessageID: fmt.Sprintf("m%d@shop.example.com", i),
			Recipient: fmt.Sprintf("user%d@rcpt.example.net", i), NextAttemptAt: time.Now().Add(time.Hour), CreatedAt: time.Now()}
	}
	if err := st.Enqueue(context.Background(), &snd, nil, ds, func([]sending.Delivery) []event.Entry { return nil }); err != nil {
		b.Fatal(err)
	}
	ids := make([]int64, n)
	for i, d := range ds {
		ids[i] = d.ID
	}
	return ids
}

// parallel runs fn b.N times from 8 goroutines and reports operations/s.
func parallel(b *testing.B, unit string, fn func(i int) error) {
	var next atomic.Int64
	var wg sync.WaitGroup
	errs := make(chan error, 8)
	b.ResetTimer()
	start := time.Now()
	for range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				i := int(next.Add(1)) - 1
				if i >= b.N {
					return
				}
				if err := fn(i); err != nil {
					errs <- err
					return
				}
			}
		}()
	}
	wg.Wait()
	b.StopTimer()
	select {
	case err := <-errs:
		b.Fatal(err)
	default:
	}
	b.ReportMetric(float64(b.N)/time.Since(start).Seconds(), unit)
}

// BenchmarkTracking measures tracking URLs over loopback HTTP (8 clients,
// each request recorded in the log) and bounce reports over SMTP to the
// inbound listener (one DSN per session, 8 senders).
//
//	POSTLINE_TEST_DATABASE_URL=... go test -run '^$' -bench BenchmarkTracking -benchtime 3000x ./internal/app/
func BenchmarkTracking(b *testing.B) {
	for _, d := range testutil.Dialects() {
		b.Run(string(d), func(b *testing.B) {
			sink := smtptest.New(b, smtptest.Config{})
			a, srv, _ := benchApp(b, d, sink)
			dom, _ := a.Domains.Get(context.Background(), "shop.example.com")
			ids := trackingFixture(b, store.NewSending(a.DB), dom.ID, dom.AccountID, 10000) // distinct per request: repeats within 2 s are not recorded
			client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 8},
				CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
			get := func(path string, want int) error {
				req, _ := http.NewRequest("GET", srv.URL+path, nil)
				req.Header.Set("User-Agent", browserUA)
				resp, err := client.Do(req)
				if err != nil {
					return err
				}
				resp.Body.Close()
				if resp.StatusCode != want {
					return fmt.Errorf("GET %s: %d", path, resp.StatusCode)
				}
				return nil
			}
			sig := a.TrackingSigner
			b.Run("open", func(b *testing.B) {
				parallel(b, "opens/s", func(i int) error {
					return get("/t/o/"+sig.Encode(tracking.Token{Kind: tracking.Open, DeliveryID: ids[i%len(ids)]})+".gif", 200)
				})
			})
			b.Run("click", func(b *testing.B) {
				parallel(b, "clicks/s", func(i int) error {
					return get("/t/c/"+sig.Encode(tracking.Token{Kind: tracking.Click, DeliveryID: ids[i%len(ids)], Link: i % 2}), 302)
				})
			})
			b.Run("forged", func(b *testing.B) {
				parallel(b, "requests/s", func(i int) error { return get(fmt.Sprintf("/t/c/%d.0.AAAAAAAAAAAAAAAAAAAAAA", i+1), 404) })
			})
			b.Run("dsn", func(b *testing.B) {
				key := []byte("bench verp key")
				in := inbound.New(inbound.Config{VERPKey: key}, store.NewTracking(a.DB), nil)
				if err := in.Listen("127.0.0.1:0"); err != nil {
					b.Fatal(err)
				}
				defer in.Shutdown(context.Background())
				parallel(b, "reports/s", func(i int) error {
					id := ids[i%len(ids)]
					return smtptest.Deliver(in.Addr(), []string{sending.VERPAddress(key, id, "bounces.shop.example.com")},
						smtptest.DSN(fmt.Sprintf("user%d@rcpt.example.net", i%len(ids)), "delayed", "4.4.7", "x@shop.example.com"))
				})
			})
		})
	}
}
