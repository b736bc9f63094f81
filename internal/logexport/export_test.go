package logexport_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/csv"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/postline/postline/internal/apperr"
	"github.com/postline/postline/internal/event"
	"github.com/postline/postline/internal/logexport"
	"github.com/postline/postline/internal/store"
	"github.com/postline/postline/internal/storetest"
	"github.com/postline/postline/internal/testutil"
)

var t0 = time.Date(2026, 11, 20, 8, 0, 0, 0, time.UTC)

// watched is the real store with each List call seen: how many bytes
// the client had been sent when the export asked for the next page.
type watched struct {
	event.Store
	mu      sync.Mutex
	sent    func() int
	calls   []listCall
	blockCh chan struct{} // when set, List waits for it
}

type listCall struct{ limit, sentBefore int }

func (w *watched) List(ctx context.Context, f event.Filter) ([]event.Entry, error) {
	if w.blockCh != nil {
		<-w.blockCh
	}
	w.mu.Lock()
	w.calls = append(w.calls, listCall{limit: f.Limit, sentBefore: w.sent()})
	w.mu.Unlock()
	return w.Store.List(ctx, f)
}

// fixture records n entries for alice.example (and some for another
// domain) and returns its domain id and the store.
func fixture(t *testing.T, d store.Dialect, n int) (int64, event.Store) {
	t.Helper()
	db := testutil.OpenDB(t, d)
	_, dom := storetest.NewDomainRow(t, db, "alice", "alice.example")
	_, other := storetest.NewDomainRow(t, db, "bob", "bob.example")
	st := store.NewEvents(db)
	batch := make([]event.Entry, 0, 1000)
	for i := 0; i < n; i++ {
		e := event.Entry{DomainID: dom.ID, MessageID: fmt.Sprintf("<m%d@alice.example>", i), Type: event.Delivered,
			Sender: "news@alice.example", Recipient: fmt.Sprintf("r%d@example.net", i), Subject: fmt.Sprintf("Issue %d", i),
			CreatedAt: t0.Add(time.Duration(i) * time.Second),
			Details:   []byte(`{"smtp_code":250,"enhanced_code":"2.0.0","smtp_message":"OK queued"}`)}
		if i%10 == 0 {
			e.Type, e.Recipient = event.Bounced, "gone@example.net"
			e.Details = []byte(`{"smtp_code":550,"enhanced_code":"5.1.1","smtp_message":"no such user"}`)
		}
		if i == 1 {
			e.Subject = `=HYPERLINK("http://evil.example","x")`
		}
		if batch = append(batch, e); len(batch) == cap(batch) || i == n-1 {
			if err := st.Insert(context.Background(), batch); err != nil {
				t.Fatal(err)
			}
			batch = batch[:0]
		}
	}
	if err := st.Insert(context.Background(), []event.Entry{{DomainID: other.ID, MessageID: "<x@bob.example>", Type: event.Bounced,
		Recipient: "gone@example.net", CreatedAt: t0, Details: []byte(`{}`)}}); err != nil {
		t.Fatal(err)
	}
	return dom.ID, st
}

func serve(t *testing.T, x *logexport.Exporter, p logexport.Params) *httptest.ResponseRecorder {
	t.Helper()
	rec := httptest.NewRecorder()
	if err := x.Serve(rec, httptest.NewRequest("GET", "/export", nil), p); err != nil {
		t.Fatalf("Serve: %v", err)
	}
	return rec
}

// TestExportStreams: 10,000 entries are read in pages of at most 1,000,
// and each page reaches the client before the next is read: when the last
// page is read, the client already holds the 9,000 rows before it.
func TestExportStreams(t *testing.T) {
	t.Parallel()
	for _, d := range testutil.Dialects() {
		t.Run(string(d), func(t *testing.T) {
			t.Parallel()
			dom, st := fixture(t, d, 10_000)
			rec := httptest.NewRecorder()
			w := &watched{Store: st, sent: func() int { return bytes.Count(rec.Body.Bytes(), []byte("\n")) }}
			x := logexport.New(event.NewService(w, event.Config{}), logexport.Config{})
			if err := x.Serve(rec, httptest.NewRequest("GET", "/export", nil),
				logexport.Params{AccountID: 1, Domain: "alice.example", Filter: event.Filter{DomainID: dom}, Format: logexport.CSV}); err != nil {
				t.Fatal(err)
			}
			rows, err := csv.NewReader(rec.Body).ReadAll()
			if err != nil || len(rows) != 10_001 {
				t.Fatalf("the CSV: %d rows, %v; want a header and 10,000", len(rows), err)
			}
			if len(w.calls) < 10 {
				t.Fatalf("%d List calls for 10,000 entries, want pages of at most 1,000", len(w.calls))
			}
			var last listCall
			for _, c := range w.calls {
				if c.limit > event.MaxBatch {
					t.Errorf("a page of %d entries was asked for, want at most %d", c.limit, event.MaxBatch)
				}
				if c.sentBefore < 1 {
					t.Errorf("a page was read before the header was sent: %+v", c)
				}
				last = c
			}
			if last.sentBefore < 9_001 {
				t.Errorf("when the last page was read the client had %d lines, want the header and 9,000 rows", last.sentBefore)
			}
		})
	}
}

// TestExportFormats: both formats parse, carry the filter's entries in
// id order with the reply split out, and the CSV is formula-safe.
func TestExportFormats(t *testing.T) {
	t.Parallel()
	for _, d := range testutil.Dialects() {
		t.Run(string(d), func(t *testing.T) {
			t.Parallel()
			dom, st := fixture(t, d, 50)
			x := logexport.New(event.NewService(st, event.Config{}), logexport.Config{})
			p := logexport.Params{AccountID: 1, Domain: "alice.example", Filter: event.Filter{DomainID: dom}, Format: logexport.CSV}
			rec := serve(t, x, p)
			if ct, cd := rec.Header().Get("Content-Type"), rec.Header().Get("Content-Disposition"); ct != "text/csv; charset=utf-8" ||
				!strings.HasPrefix(cd, `attachment; filename="alice.example-log-`) || !strings.HasSuffix(cd, `.csv"`) {
				t.Errorf("CSV headers: %q, %q", ct, cd)
			}
			rows, err := csv.NewReader(rec.Body).ReadAll()
			if err != nil || len(rows) != 51 || strings.Join(rows[0], ",") != strings.Join(logexport.Columns, ",") {
				t.Fatalf("CSV: %d rows, %v, header %v", len(rows), err, rows[0])
			}
			if got := rows[2][6]; got != `'=HYPERLINK("http://evil.example","x")` {
				t.Errorf("a formula subject exported as %q, want it quoted", got)
			}
			if got := strings.Join(rows[1][8:11], "|"); rows[1][2] != "bounced" || got != "550|5.1.1|no such user" {
				t.Errorf("the first row (a bounce): %v; reply %q", rows[1], got)
			}

			p.Format = logexport.NDJSON
			p.Filter.Type, p.Filter.Recipient = event.Bounced, "GONE@example.net"
			p.Filter.Start, p.Filter.End = t0.Add(10*time.Second), t0.Add(30*time.Second)
			rec = serve(t, x, p)
			if ct := rec.Header().Get("Content-Type"); ct != "application/x-ndjson" {
				t.Errorf("NDJSON Content-Type %q", ct)
			}
			var got []string
			sc := bufio.NewScanner(rec.Body)
			for sc.Scan() {
				var e struct {
					MessageID string `json:"message_id"`
					Type      string `json:"event_type"`
					Details   struct {
						Code int `json:"smtp_code"`
					} `json:"details"`
				}
				if err := json.Unmarshal(sc.Bytes(), &e); err != nil {
					t.Fatalf("NDJSON line %q: %v", sc.Text(), err)
				}
				got = append(got, fmt.Sprintf("%s %s %d", e.MessageID, e.Type, e.Details.Code))
			}
			want := []string{"<m10@alice.example> bounced 550", "<m20@alice.example> bounced 550", "<m30@alice.example> bounced 550"}
			if strings.Join(got, ";") != strings.Join(want, ";") {
				t.Errorf("bounces to gone@ from 10 s to 30 s = %q, want %q (not bob.example's)", got, want)
			}
		})
	}
}

// TestExportLimit: a third export of one account while two run is
// refused, naming the limit; another account's is not; when one ends the
// next may start.
func TestExportLimit(t *testing.T) {
	t.Parallel()
	dom, st := fixture(t, store.SQLite, 10)
	w := &watched{Store: st, sent: func() int { return 0 }, blockCh: make(chan struct{})}
	x := logexport.New(event.NewService(w, event.Config{}), logexport.Config{PerAccount: 2})
	p := logexport.Params{AccountID: 1, Domain: "alice.example", Filter: event.Filter{DomainID: dom}, Format: logexport.NDJSON}
	var wg sync.WaitGroup
	started := make(chan struct{}, 3)
	run := func(p logexport.Params) {
		defer wg.Done()
		rec := httptest.NewRecorder()
		started <- struct{}{}
		if err := x.Serve(rec, httptest.NewRequest("GET", "/export", nil), p); err != nil || rec.Code != 200 {
			t.Errorf("a held export: %d, %v", rec.Code, err)
		}
	}
	wg.Add(2)
	go run(p)
	go run(p)
	<-started
	<-started
	// Both hold their slot once their header is out (before List).
	waitFor(t, func() bool { return x.Running(1) == 2 })
	err := x.Serve(httptest.NewRecorder(), httptest.NewRequest("GET", "/export", nil), p)
	if e, ok := apperr.As(err); !ok || e.Code != apperr.RateLimited || !strings.Contains(e.Message, "At most 2 log exports") ||
		!strings.Contains(e.Message, "--log-exports-per-account") || e.RetryAfter != 5 {
		t.Errorf("a third export: %v, want RateLimited naming the limit and its flag", err)
	}
	other := p
	other.AccountID = 2
	wg.Add(1)
	go run(other) // another account's export: not counted against alice
	<-started
	waitFor(t, func() bool { return x.Running(2) == 1 })
	close(w.blockCh)
	wg.Wait()
	if n := x.Running(1); n != 0 {
		t.Errorf("%d exports still counted after they ended", n)
	}
	if rec := serve(t, x, p); strings.Count(rec.Body.String(), "\n") != 10 {
		t.Errorf("an export after the others ended: %q", rec.Body.String())
	}
}

// TestExportAborts: an export whose request ends mid-way aborts the
// response rather than ending it as if whole.
func TestExportAborts(t *testing.T) {
	t.Parallel()
	dom, st := fixture(t, store.SQLite, 3000)
	ctx, cancel := context.WithCancel(context.Background())
	rec := httptest.NewRecorder()
	w := &watched{Store: st, sent: func() int {
		if rec.Body.Len() > 0 {
			cancel() // the client leaves after the first page
		}
		return 0
	}}
	x := logexport.New(event.NewService(w, event.Config{}), logexport.Config{})
	defer func() {
		if p := recover(); p != http.ErrAbortHandler {
			t.Errorf("an export cut short: recovered %v, want http.ErrAbortHandler", p)
		}
	}()
	x.Serve(rec, httptest.NewRequest("GET", "/export", nil).WithContext(ctx), //nolint:errcheck // it panics
		logexport.Params{AccountID: 1, Domain: "alice.example", Filter: event.Filter{DomainID: dom}, Format: logexport.NDJSON})
	t.Error("Serve returned after its request ended mid-way")
}

func waitFor(t *testing.T, ok func() bool) {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); !ok(); time.Sleep(5 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("timed out")
		}
	}
}
