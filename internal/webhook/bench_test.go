package webhook_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"time"

	"github.com/postline/postline/internal/event"
	"github.com/postline/postline/internal/secret"
	"github.com/postline/postline/internal/store"
	"github.com/postline/postline/internal/storetest"
	"github.com/postline/postline/internal/testutil"
	"github.com/postline/postline/internal/webhook"
)

// BenchmarkDispatch measures log entries pushed to a local endpoint: b.N
// entries already recorded, one webhook, posts of up to 100 entries signed
// and acknowledged one after another (a webhook's posts are sequential, to
// keep the order).
//
//	POSTLINE_TEST_DATABASE_URL=... go test -run '^$' -bench BenchmarkDispatch -benchtime 20000x ./internal/webhook/
func BenchmarkDispatch(b *testing.B) {
	for _, d := range testutil.Dialects() {
		b.Run(string(d), func(b *testing.B) {
			ctx := context.Background()
			db := testutil.OpenDB(b, d)
			_, dom := storetest.NewDomainRow(b, db, "alice", "alice.example")
			box, _ := secret.NewBox(make([]byte, 32))
			st, events := store.NewWebhooks(db, box), store.NewEvents(db)
			var posts atomic.Int64
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				posts.Add(1)
				w.WriteHeader(204)
			}))
			defer srv.Close()
			wh, err := webhook.NewService(st, nil).Create(ctx, dom.ID, srv.URL, nil)
			if err != nil {
				b.Fatal(err)
			}
			es := make([]event.Entry, b.N)
			for i := range es {
				es[i] = event.Entry{DomainID: dom.ID, Type: event.Delivered, Recipient: "x@example.net", Subject: "Your order",
					CreatedAt: time.Now(), Details: []byte(`{"smtp_code":250,"attempt":1}`)}
			}
			for i := 0; i < len(es); i += 5000 {
				if err := events.Insert(ctx, es[i:min(i+5000, len(es))]); err != nil {
					b.Fatal(err)
				}
			}
			disp := webhook.NewDispatcher(webhook.DispatcherConfig{AllowPrivate: true}, st, events,
				func(context.Context, int64) (string, error) { return dom.Name, nil })
			b.ResetTimer()
			for {
				disp.RunOnce(ctx)
				list, _ := st.List(ctx, dom.ID)
				if list[0].Cursor >= wh.Cursor+int64(b.N) || list[0].Attempts > 0 {
					break
				}
			}
			b.StopTimer()
			b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "events/s")
			b.ReportMetric(float64(posts.Load()), "posts")
		})
	}
}
