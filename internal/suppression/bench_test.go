package suppression_test

import (
	"context"
	"fmt"
	"os"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/postline/postline/internal/store"
	"github.com/postline/postline/internal/storetest"
	"github.com/postline/postline/internal/suppression"
	"github.com/postline/postline/internal/testutil"
)

// BenchmarkSuppressions measures, on each dialect, the batched check of
// 1000 recipients and a searched list page against N rows for one domain
// (POSTLINE_BENCH_SUPPRESSIONS, default 1,000,000; another domain holds
// N/10 more).
//
//	go test -run '^$' -bench BenchmarkSuppressions -benchtime 20x ./internal/suppression/
func BenchmarkSuppressions(b *testing.B) {
	n := 1_000_000
	if v, err := strconv.Atoi(os.Getenv("POSTLINE_BENCH_SUPPRESSIONS")); err == nil {
		n = v
	}
	for _, d := range testutil.Dialects() {
		b.Run(string(d), func(b *testing.B) {
			db := testutil.OpenDB(b, d)
			_, dom := storetest.NewDomainRow(b, db, "alice", "alice.example")
			_, other := storetest.NewDomainRow(b, db, "bob", "bob.example")
			start := time.Now()
			seed(b, db, dom.ID, n)
			seed(b, db, other.ID, n/10)
			if d == store.Postgres { // steady state: autovacuum would have analysed by now
				if _, err := db.Writer().ExecContext(context.Background(), `ANALYZE suppressions`); err != nil {
					b.Fatal(err)
				}
			}
			b.Logf("%s: seeded %d rows in %s", d, n+n/10, time.Since(start).Round(time.Millisecond))
			svc := suppression.NewService(store.NewSuppressions(db), nil)
			ctx := context.Background()
			rcpts := make([]string, 1000)
			for i := range rcpts { // half listed, half not
				rcpts[i] = fmt.Sprintf("user%d@d%d.example", i*(n/1000)+i%2, (i*(n/1000))%500)
			}
			b.Run("check-1000", func(b *testing.B) {
				lat := make([]time.Duration, 0, b.N)
				for b.Loop() {
					t0 := time.Now()
					if _, err := svc.CheckMany(ctx, dom.ID, rcpts); err != nil {
						b.Fatal(err)
					}
					lat = append(lat, time.Since(t0))
				}
				report(b, lat)
			})
			b.Run("list-search", func(b *testing.B) {
				lat := make([]time.Duration, 0, b.N)
				for b.Loop() {
					t0 := time.Now()
					pg, err := svc.List(ctx, dom.ID, suppression.Bounce, "user4241", 1, 10)
					if err != nil || pg.Total == 0 {
						b.Fatal(pg.Total, err)
					}
					lat = append(lat, time.Since(t0))
				}
				report(b, lat)
			})
			b.Run("list-page", func(b *testing.B) {
				lat := make([]time.Duration, 0, b.N)
				for b.Loop() {
					t0 := time.Now()
					if _, err := svc.List(ctx, dom.ID, suppression.Bounce, "", 50, 100); err != nil {
						b.Fatal(err)
					}
					lat = append(lat, time.Since(t0))
				}
				report(b, lat)
			})
		})
	}
}

func report(b *testing.B, lat []time.Duration) {
	sort.Slice(lat, func(i, j int) bool { return lat[i] < lat[j] })
	if len(lat) > 0 {
		b.ReportMetric(float64(lat[len(lat)/2].Microseconds())/1000, "p50-ms")
		b.ReportMetric(float64(lat[len(lat)*99/100].Microseconds())/1000, "p99-ms")
	}
}

// seed inserts n bounce/unsubscribe rows spread over 500 domains.
func seed(b *testing.B, db *store.DB, domainID int64, n int) {
	const batch = 500
	ctx := context.Background()
	for startRow := 0; startRow < n; startRow += 50_000 {
		err := db.InTx(ctx, func(q store.Querier) error {
			for i := startRow; i < min(startRow+50_000, n); i += batch {
				var sb strings.Builder
				sb.WriteString(`INSERT INTO suppressions (domain_id, type, recipient_type, recipient, source, created_at) VALUES `)
				for j := i; j < min(i+batch, n); j++ {
					if j > i {
						sb.WriteByte(',')
					}
					typ := "bounce"
					if j%3 == 0 {
						typ = "unsubscribe"
					}
					fmt.Fprintf(&sb, "(%d,'%s','email','user%d@d%d.example','bench',%d)", domainID, typ, j, j%500, 1_700_000_000_000+int64(j))
				}
				if _, err := q.ExecContext(ctx, sb.String()); err != nil {
					return err
				}
			}
			return nil
		})
		if err != nil {
			b.Fatal(err)
		}
	}
}
