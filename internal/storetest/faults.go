package storetest

import (
	"context"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/postline/postline/internal/apperr"
	"github.com/postline/postline/internal/store"
)

// testCallTimeout: a call marked by WithCallTimeout that must wait (for
// SQLite's one writer, for a PostgreSQL row lock) gives up at its bound,
// with an error that answers 503; the database works on after it.
func testCallTimeout(t *testing.T, db *store.DB) {
	ctx := context.Background()
	m := store.NewMeta(db)
	if err := m.Set(ctx, "lock", "0"); err != nil {
		t.Fatal(err)
	}
	held, release := make(chan struct{}), make(chan struct{})
	var once sync.Once
	free := func() { once.Do(func() { close(release) }) }
	defer free()
	// Without the bound the calls below would wait for the holder; it
	// lets go after 5 s so that such a failure is slow, not a hang.
	time.AfterFunc(5*time.Second, free)
	done := make(chan error, 1)
	go func() {
		done <- db.InTx(ctx, func(q store.Querier) error {
			if _, err := q.ExecContext(ctx, `UPDATE meta SET value = '1' WHERE name = 'lock'`); err != nil {
				return err
			}
			close(held)
			<-release
			return nil
		})
	}()
	select {
	case <-held:
	case err := <-done:
		t.Fatalf("holding the lock: %v", err)
	}
	const limit = 200 * time.Millisecond
	calls := []struct {
		name string
		call func(ctx context.Context) error
	}{
		{"a statement", func(ctx context.Context) error { return m.Set(ctx, "lock", "2") }},
		{"a transaction", func(ctx context.Context) error {
			return db.InTx(ctx, func(q store.Querier) error {
				_, err := q.ExecContext(ctx, `UPDATE meta SET value = '3' WHERE name = 'lock'`)
				return err
			})
		}},
	}
	for _, c := range calls {
		request := store.WithCallTimeout(ctx, limit) // a request's context
		start := time.Now()
		err := c.call(request)
		took := time.Since(start)
		e, ok := apperr.As(apperr.Classify(err))
		if !ok || e.Code != apperr.Unavailable || took < limit || took > 2*time.Second {
			t.Errorf("%s waiting for a lock with a %s bound: %v after %s, want unavailable after about %s", c.name, limit, err, took, limit)
		}
		// The request's next call gives up at once: one timeout per
		// request, not one per call.
		start = time.Now()
		_, _, err = m.Get(request, "lock")
		if took := time.Since(start); err == nil || took > limit/2 {
			t.Errorf("after %s timed out, a read with the same context: %v after %s; want an error at once", c.name, err, took)
		}
	}
	free()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if err := m.Set(store.WithCallTimeout(ctx, limit), "lock", "4"); err != nil {
		t.Fatalf("after the lock is released: %v", err)
	}
}

// testProbeWrite: the readiness probe commits its meta row.
func testProbeWrite(t *testing.T, db *store.DB) {
	ctx := context.Background()
	before := time.Now().UnixMilli()
	if err := db.ProbeWrite(ctx); err != nil {
		t.Fatalf("ProbeWrite: %v", err)
	}
	v, ok, err := store.NewMeta(db).Get(ctx, "ready-probe")
	at, perr := strconv.ParseInt(v, 10, 64)
	if err != nil || !ok || perr != nil || at < before {
		t.Fatalf("the probe's row = %q, %v, %v; want the time of the probe", v, ok, err)
	}
}
