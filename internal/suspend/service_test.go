package suspend

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/postline/postline/internal/apperr"
)

// memStore is a Store in memory that counts its reads.
type memStore struct {
	mu     sync.Mutex
	rows   []Suspension
	reads  int
	fail   error
	pruned []time.Time // the times PruneSuspensions was given
}

func (m *memStore) PutSuspension(_ context.Context, s Suspension) (Suspension, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	for i, r := range m.rows {
		if r.Kind == s.Kind && r.Value == s.Value && r.EndedAt == nil {
			at := s.CreatedAt
			m.rows[i].EndedAt, m.rows[i].Ended = &at, EndReplaced
		}
	}
	s.ID = int64(len(m.rows) + 1)
	m.rows = append(m.rows, s)
	return s, nil
}

func (m *memStore) SuspensionHistory(_ context.Context, since time.Time, limit int) ([]Suspension, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	var out []Suspension
	for i := len(m.rows) - 1; i >= 0 && len(out) < limit; i-- {
		r := m.rows[i]
		if end, _, ended := r.End(since); !ended || !end.Before(since) || !r.CreatedAt.Before(since) {
			out = append(out, r)
		}
	}
	return out, nil
}

func (m *memStore) Suspensions(_ context.Context, now time.Time) ([]Suspension, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.reads++
	if m.fail != nil {
		return nil, m.fail
	}
	var out []Suspension
	for _, r := range m.rows {
		if r.InForce(now) {
			out = append(out, r)
		}
	}
	return out, nil
}

func (m *memStore) DeleteSuspension(ctx context.Context, id int64, now time.Time) (Suspension, error) {
	return m.del(func(s Suspension) bool { return s.ID == id }, now)
}

func (m *memStore) DeleteSuspensionOf(ctx context.Context, kind Kind, value string, now time.Time) (Suspension, error) {
	return m.del(func(s Suspension) bool { return s.Kind == kind && s.Value == value }, now)
}

func (m *memStore) del(match func(Suspension) bool, now time.Time) (Suspension, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	for i, r := range m.rows {
		if match(r) && r.InForce(now) {
			m.rows[i].EndedAt, m.rows[i].Ended = &now, EndResumed
			return m.rows[i], nil
		}
	}
	return Suspension{}, apperr.Errorf(apperr.NotFound, "not found")
}

func (m *memStore) PruneSuspensions(_ context.Context, before time.Time) (int64, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.pruned = append(m.pruned, before)
	return 0, nil
}

// Suspend checks and normalises what it is given; Suspended answers for
// sites, with the end and the reason, from a copy read at most once a
// Refresh, which the Service's own changes invalidate.
func TestSuspendedFromACopy(t *testing.T) {
	ctx := context.Background()
	now := time.Date(2026, 11, 26, 12, 0, 0, 0, time.UTC)
	st := &memStore{}
	// A refresh period no test run reaches, so only the Service's own
	// changes make it read again.
	svc := New(st, Config{Now: func() time.Time { return now }, Refresh: time.Hour,
		Check: func(_ context.Context, k Kind, v string) (string, error) {
			if v == "nobody" {
				return "", apperr.Errorf(apperr.NotFound, "account not found")
			}
			return v, nil
		}})
	if _, _, ok := svc.Suspended(ctx, "mx.example.net"); ok {
		t.Fatal("suspended before any suspension")
	}
	sp, err := svc.Suspend(ctx, Request{Kind: Site, Value: " MX.Example.NET. ", Duration: time.Hour, Reason: " 421s ", By: "op"})
	if err != nil || sp.Value != "mx.example.net" || sp.Reason != "421s" || sp.Until == nil || !sp.Until.Equal(now.Add(time.Hour)) {
		t.Fatalf("Suspend = %+v, %v", sp, err)
	}
	until, reason, ok := svc.Suspended(ctx, "MX.example.net")
	if !ok || !until.Equal(now.Add(time.Hour)) || reason != "421s" {
		t.Fatalf("Suspended = %v %q %v; want until +1h for 421s", until, reason, ok)
	}
	reads := st.reads
	for range 10 {
		svc.Suspended(ctx, "mx.example.net")
		svc.Any(ctx, Domain)
	}
	if st.reads != reads {
		t.Errorf("%d reads for 20 questions within the refresh period; want none", st.reads-reads)
	}

	// Another process's suspension is seen once the copy is old.
	st.PutSuspension(ctx, Suspension{Kind: Domain, Value: "shop.example", CreatedAt: now})
	if svc.Any(ctx, Domain) {
		t.Error("a change made elsewhere seen before the copy's refresh")
	}
	svc.read = svc.read.Add(-2 * time.Hour)
	if _, ok := svc.Holding(ctx, Domain, "shop.example"); !ok {
		t.Error("a change made elsewhere not seen after the refresh period")
	}

	// A store that fails keeps the last copy.
	st.fail = apperr.Errorf(apperr.Unavailable, "down")
	svc.read = time.Time{}
	if _, _, ok := svc.Suspended(ctx, "mx.example.net"); !ok {
		t.Error("a failed read forgot the suspensions in force")
	}
	st.fail = nil

	// The end passes: no longer suspended, without reading again.
	now = now.Add(time.Hour)
	if _, _, ok := svc.Suspended(ctx, "mx.example.net"); ok {
		t.Error("still suspended at its end")
	}

	for _, c := range []struct {
		req   Request
		code  apperr.Code
		field string
	}{
		{Request{Kind: "campaign", Value: "x"}, apperr.Invalid, "kind"},
		{Request{Kind: Domain, Value: "  "}, apperr.Invalid, "domain"},
		{Request{Kind: Site, Value: "a b"}, apperr.Invalid, "site"},
		{Request{Kind: Site, Value: "x", Duration: -time.Second}, apperr.Invalid, "duration"},
		{Request{Kind: Site, Value: "x", Reason: string(make([]byte, 501))}, apperr.Invalid, "reason"},
		{Request{Kind: Account, Value: "nobody"}, apperr.NotFound, ""},
	} {
		_, err := svc.Suspend(ctx, c.req)
		e, _ := apperr.As(err)
		if e == nil || e.Code != c.code || (c.field != "" && e.Fields[c.field] == nil) {
			t.Errorf("Suspend(%+v) = %v; want %s naming %q", c.req, err, c.code, c.field)
		}
	}

	if _, err := svc.ResumeOf(ctx, Domain, "Shop.Example."); err != nil {
		t.Fatalf("ResumeOf: %v", err)
	}
	if _, ok := svc.Holding(ctx, Domain, "shop.example"); ok {
		t.Error("a resumed suspension still holds in the Service that resumed it")
	}
	if _, err := svc.ResumeOf(ctx, Domain, "shop.example"); apperr.CodeOf(err) != apperr.NotFound {
		t.Errorf("ResumeOf twice = %v; want not_found", err)
	}
}

// Ended suspensions stay listed by History with when and how they ended
// (resumed, replaced, expired) and no longer hold; Suspend prunes only
// what ended longer ago than the retention.
func TestHistoryKeepsWhatEnded(t *testing.T) {
	ctx := context.Background()
	now := time.Date(2026, 11, 26, 12, 0, 0, 0, time.UTC)
	st := &memStore{}
	svc := New(st, Config{Now: func() time.Time { return now }, Retention: 48 * time.Hour})
	first, err := svc.Suspend(ctx, Request{Kind: Site, Value: "mx.a.example", Duration: time.Minute, Reason: "storm"})
	if err != nil {
		t.Fatal(err)
	}
	if len(st.pruned) != 1 || !st.pruned[0].Equal(now.Add(-48*time.Hour)) {
		t.Errorf("Suspend pruned before %v; want the retention's start %v", st.pruned, now.Add(-48*time.Hour))
	}
	now = now.Add(time.Second)
	second, _ := svc.Suspend(ctx, Request{Kind: Site, Value: "mx.a.example", Reason: "still"})
	held, _ := svc.Suspend(ctx, Request{Kind: Domain, Value: "shop.example"})
	if _, err := svc.Resume(ctx, held.ID); err != nil {
		t.Fatal(err)
	}
	now = now.Add(2 * time.Minute)
	list, err := svc.History(ctx)
	if err != nil || len(list) != 3 {
		t.Fatalf("History = %+v, %v; want 3", list, err)
	}
	ends := map[int64]string{}
	for _, sp := range list {
		if _, how, ok := sp.End(now); ok {
			ends[sp.ID] = how
		}
	}
	if ends[first.ID] != EndReplaced || ends[held.ID] != EndResumed || ends[second.ID] != "" {
		t.Errorf("ends = %v; want the first replaced, the domain's resumed, the second in force", ends)
	}
	if _, ok := svc.Holding(ctx, Domain, "shop.example"); ok {
		t.Error("a resumed suspension kept in the history still holds")
	}
	if sp, ok := svc.Holding(ctx, Site, "mx.a.example"); !ok || sp.ID != second.ID {
		t.Errorf("the site is held by %+v, %v; want the second suspension", sp, ok)
	}
}
