package app_test

import (
	"context"
	"database/sql"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/postline/postline/internal/smtptest"
	"github.com/postline/postline/internal/stats"
	"github.com/postline/postline/internal/testutil"
)

// BenchmarkSendTags measures what keeping Mailgun's stats costs a send of
// 1,000 recipients through /v3/: without tags, with 10 tags, and with 10
// tags the domain cannot track because it already has
// stats.MaxTagsPerDomain others (every recording then asks whether there
// is room). Each iteration queues one such send (intake: the request,
// 1,000 accepted entries) and delivers it with the workers (1,000
// delivered entries, each carrying the tags). Compare the variants'
// ns/op, intake-ms and delivery-ms, and cpu-ms (this process's CPU per
// send: on SQLite all of the work, and what other work on the machine
// does not change).
//
//	POSTLINE_TEST_DATABASE_URL=... go test -run '^$' -bench BenchmarkSendTags -benchtime 3x ./internal/app/
func BenchmarkSendTags(b *testing.B) {
	const rcpts = 1000
	tags := make([]string, 10)
	for i := range tags {
		tags[i] = "campaign-" + strconv.Itoa(i)
	}
	for _, d := range testutil.Dialects() {
		for _, v := range []struct {
			name  string
			tags  []string
			bound bool
		}{{"none", nil, false}, {"10tags", tags, false}, {"10tags-untracked", tags, true}} {
			b.Run(string(d)+"/"+v.name, func(b *testing.B) {
				sink := smtptest.New(b, smtptest.Config{})
				a, srv, auth := benchApp(b, d, sink)
				if v.bound {
					fillTags(b, a.DB.SQL(), stats.MaxTagsPerDomain)
				}
				_, key, _ := strings.Cut(auth, ":")
				ctx := context.Background()
				if err := a.StartWorkers(ctx); err != nil {
					b.Fatal(err)
				}
				var intake, delivery time.Duration
				b.ResetTimer()
				cpu := processCPU() // on PostgreSQL the server's work is not in it
				for i := 0; i < b.N; i++ {
					form := url.Values{"from": {"news@shop.example.com"}, "subject": {"Spring"}, "text": {"Sale"}, "o:tag": v.tags}
					for r := 0; r < rcpts; r++ {
						form.Add("to", "user"+strconv.Itoa(i)+"-"+strconv.Itoa(r)+"@rcpt.example.net")
					}
					start := time.Now()
					req, _ := http.NewRequest("POST", srv.URL+"/v3/shop.example.com/messages", strings.NewReader(form.Encode()))
					req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
					req.SetBasicAuth("api", key)
					resp, err := http.DefaultClient.Do(req)
					if err != nil {
						b.Fatal(err)
					}
					resp.Body.Close()
					if resp.StatusCode != 200 {
						b.Fatalf("send: %d", resp.StatusCode)
					}
					queued := time.Now()
					intake += queued.Sub(start)
					waitDelivered(b, a.DB.SQL(), (i+1)*rcpts)
					delivery += time.Since(queued)
				}
				b.ReportMetric(float64(intake.Milliseconds())/float64(b.N), "intake-ms")
				b.ReportMetric(float64(delivery.Milliseconds())/float64(b.N), "delivery-ms")
				b.ReportMetric(float64((processCPU()-cpu).Milliseconds())/float64(b.N), "cpu-ms")
			})
		}
	}
}

// fillTags gives the benchmark domain n tags, none of which the sends use.
func fillTags(b *testing.B, db *sql.DB, n int) {
	b.Helper()
	now := strconv.FormatInt(time.Now().UnixMilli(), 10)
	if _, err := db.Exec(`WITH RECURSIVE g(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM g WHERE n < ` + strconv.Itoa(n) + `)
		INSERT INTO tags (domain_id, tag, description, first_seen, last_seen)
		SELECT (SELECT id FROM domains WHERE name = 'shop.example.com'), 'other-' || n, '', ` + now + `, ` + now + ` FROM g`); err != nil {
		b.Fatal(err)
	}
}

// waitDelivered waits until the log has n delivered entries.
func waitDelivered(b *testing.B, db *sql.DB, n int) {
	b.Helper()
	deadline := time.Now().Add(5 * time.Minute)
	for {
		var got int
		if err := db.QueryRow(`SELECT count(*) FROM events WHERE event_type = 'delivered'`).Scan(&got); err != nil {
			b.Fatal(err)
		}
		if got >= n {
			return
		}
		if time.Now().After(deadline) {
			b.Fatalf("%d of %d delivered after 5 minutes", got, n)
		}
		time.Sleep(20 * time.Millisecond)
	}
}
