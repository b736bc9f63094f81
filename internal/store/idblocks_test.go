package store

import (
	"context"
	"fmt"
	"math/rand/v2"
	"net/url"
	"sync"
	"testing"
)

// Two processes taking ids in blocks from the same sequences: every id is
// handed out once, each take's ids increase, and the sequences are asked
// about once a block, not once a take.
func TestIDReserveHandsOutEachIDOnce(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	base := openTestPostgres(t)
	schema := fmt.Sprintf("idblocks_%d", rand.Int64N(1<<40))
	if _, err := base.w.ExecContext(ctx, `CREATE SCHEMA `+schema+`; CREATE SEQUENCE `+schema+`.sends_id_seq; CREATE SEQUENCE `+schema+`.deliveries_id_seq`); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { base.w.ExecContext(context.Background(), `DROP SCHEMA `+schema+` CASCADE`) })
	u, err := url.Parse(base.URL)
	if err != nil {
		t.Fatal(err)
	}
	q := u.Query()
	q.Set("search_path", schema)
	u.RawQuery = q.Encode()
	var procs []*DB
	for range 2 {
		db, err := Open(ctx, u.String())
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { db.Close() })
		procs = append(procs, db)
	}

	var mu sync.Mutex
	seen := map[string]bool{}
	sends := 0
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			db := procs[g%2]
			for i := range 100 {
				s, d, err := db.ids.take(ctx, db.w, 1+i%3, 1+i%5)
				if err != nil {
					t.Error(err)
					return
				}
				mu.Lock()
				sends += len(s)
				for name, ids := range map[string][]int64{"send": s, "delivery": d} {
					for k, id := range ids {
						key := fmt.Sprint(name, id)
						if seen[key] || (k > 0 && id <= ids[k-1]) {
							t.Errorf("%s ids %v: %d handed out twice or out of order", name, ids, id)
						}
						seen[key] = true
					}
				}
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	var last int64
	if err := base.w.QueryRowContext(ctx, `SELECT last_value FROM `+schema+`.sends_id_seq`).Scan(&last); err != nil {
		t.Fatal(err)
	}
	// Without blocks the sequence would stand at exactly what was handed
	// out; each process holds at most a block and a take's lack ahead.
	if max := int64(sends + 2*(idBlock+3)); last > max || last <= int64(sends) {
		t.Fatalf("sends sequence at %d after %d sends ids handed out; want above it (a block held) and at most %d", last, sends, max)
	}
}
