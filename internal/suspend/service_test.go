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
	mu    sync.Mutex
	rows  []Suspension
	reads int
	fail  error
}

func (m *memStore) PutSuspension(_ context.Context, s Suspension) (Suspension, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	for i, r := range m.rows {
		if r.Kind == s.Kind && r.Value == s.Value {
			s.ID = r.ID
			m.rows[i] = s
			return s, nil
		}
	}
	s.ID = int64(len(m.rows) + 1)
	m.rows = append(m.rows, s)
	return s, nil
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
			m.rows = append(m.rows[:i], m.rows[i+1:]...)
			return r, nil
		}
	}
	return Suspension{}, apperr.Errorf(apperr.NotFound, "not found")
}

func (m *memStore) PruneSuspensions(_ context.Context, now time.Time) (int64, error) { return 0, nil }

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
