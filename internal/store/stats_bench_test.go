package store_test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/postline/postline/internal/event"
	"github.com/postline/postline/internal/stats"
	"github.com/postline/postline/internal/store"
	"github.com/postline/postline/internal/storetest"
	"github.com/postline/postline/internal/testutil"
)

// BenchmarkRecordTags records a delivered entry (one transaction, as a
// delivery's outcome is) without tags, with 10 tracked tags, and with 10
// tags its domain cannot track because it has stats.MaxTagsPerDomain.
//
//	POSTLINE_TEST_DATABASE_URL=... go test -run '^$' -bench BenchmarkRecordTags ./internal/store/
func BenchmarkRecordTags(b *testing.B) {
	ten := make([]string, 10)
	for i := range ten {
		ten[i] = fmt.Sprintf("campaign-%d", i)
	}
	for _, d := range testutil.Dialects() {
		for _, v := range []struct {
			name  string
			tags  string
			bound bool
		}{{"none", "", false}, {"10tags", strings.Join(ten, ","), false}, {"10tags-untracked", strings.Join(ten, ","), true}} {
			b.Run(string(d)+"/"+v.name, func(b *testing.B) {
				db := testutil.OpenDB(b, d)
				_, dom := storetest.NewDomainRow(b, db, "alice", "alice.example")
				ev := store.NewEvents(db)
				ctx := context.Background()
				at := time.Now()
				if v.bound {
					fillTags(b, ev, dom.ID, at)
				}
				b.ResetTimer()
				for i := 0; i < b.N; i++ {
					en := event.Entry{DomainID: dom.ID, MessageID: "<m@alice.example>", Type: event.Delivered,
						Recipient: fmt.Sprintf("r%d@example.net", i), Tags: v.tags, CreatedAt: at, Details: []byte(`{}`)}
					if err := ev.Insert(ctx, []event.Entry{en}); err != nil {
						b.Fatal(err)
					}
				}
			})
		}
	}
}

// fillTags gives the domain stats.MaxTagsPerDomain tags, none of the
// benchmark's.
func fillTags(b *testing.B, ev store.Events, domainID int64, at time.Time) {
	b.Helper()
	names := make([]string, stats.MaxTagsPerDomain)
	for i := range names {
		names[i] = fmt.Sprintf("other-%04d", i)
	}
	var batch []event.Entry
	for part := range slices.Chunk(names, stats.MaxTagsPerEntry) {
		batch = append(batch, event.Entry{DomainID: domainID, MessageID: "<fill@alice.example>", Type: event.Queued,
			Recipient: "fill@example.net", Tags: strings.Join(part, ","), CreatedAt: at, Details: []byte(`{}`)})
	}
	if err := ev.Insert(context.Background(), batch); err != nil {
		b.Fatal(err)
	}
}
