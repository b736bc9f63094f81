package app_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"mime/multipart"
	"net/http"
	"strings"
	"sync"
	"testing"

	"github.com/postline/postline/internal/smtptest"
	"github.com/postline/postline/internal/testutil"
)

// batchBody is one request for n recipients, each with its own variables
// (the inline subject and text are templates).
func batchBody(n, round int) (string, []byte) {
	var buf bytes.Buffer
	mw := multipart.NewWriter(&buf)
	mw.WriteField("from", "orders@shop.example.com")
	mw.WriteField("subject", "Your order {{order}}")
	mw.WriteField("text", "Hello {{name}}, "+strings.Repeat("thank you for your order. ", 20))
	mw.WriteField("html", "<p>Hello {{name}}, "+strings.Repeat("thank you for your order. ", 20)+"</p>")
	vars := make(map[string]map[string]any, n)
	for i := 0; i < n; i++ {
		addr := fmt.Sprintf("user%d-%d@rcpt.example.net", round, i)
		mw.WriteField("to", addr)
		vars[addr] = map[string]any{"name": fmt.Sprintf("User %d", i), "order": i}
	}
	b, _ := json.Marshal(vars)
	mw.WriteField("recipient_variables", string(b))
	mw.Close()
	return mw.FormDataContentType(), buf.Bytes()
}

// BenchmarkBatchVsSingle queues 1,000 personalised messages per iteration
// two ways in one run: one batch request with recipient_variables, and
// 1,000 single-recipient requests from 8 clients. No workers run.
//
//	go test -run '^$' -bench BenchmarkBatchVsSingle -benchtime 5x ./internal/app/
func BenchmarkBatchVsSingle(b *testing.B) {
	for _, d := range testutil.Dialects() {
		sink := smtptest.New(b, smtptest.Config{})
		_, srv, auth := benchApp(b, d, sink)
		user, key, _ := strings.Cut(auth, ":")
		client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 16}}
		post := func(ct string, body []byte) {
			req, _ := http.NewRequest("POST", srv.URL+"/api/domains/shop.example.com/message", bytes.NewReader(body))
			req.Header.Set("Content-Type", ct)
			req.SetBasicAuth(user, key)
			resp, err := client.Do(req)
			if err != nil {
				b.Fatal(err)
			}
			resp.Body.Close()
			if resp.StatusCode != 202 {
				b.Fatalf("status %d", resp.StatusCode)
			}
		}
		b.Run(string(d)+"/batch-1000", func(b *testing.B) {
			for i := 0; i < b.N; i++ {
				b.StopTimer()
				ct, body := batchBody(1000, i)
				b.StartTimer()
				post(ct, body)
			}
			b.ReportMetric(float64(b.N*1000)/b.Elapsed().Seconds(), "msgs/s")
		})
		b.Run(string(d)+"/single-x1000", func(b *testing.B) {
			for i := 0; i < b.N; i++ {
				var wg sync.WaitGroup
				next := make(chan int)
				for c := 0; c < 8; c++ {
					wg.Add(1)
					go func() {
						defer wg.Done()
						for n := range next {
							ct, body := sendBody(i*1000 + n)
							post(ct, body)
						}
					}()
				}
				for n := 0; n < 1000; n++ {
					next <- n
				}
				close(next)
				wg.Wait()
			}
			b.ReportMetric(float64(b.N*1000)/b.Elapsed().Seconds(), "msgs/s")
		})
	}
}
