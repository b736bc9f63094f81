package suppression_test

import (
	"context"
	"sync/atomic"
	"testing"

	"github.com/postline/postline/internal/store"
	"github.com/postline/postline/internal/storetest"
	"github.com/postline/postline/internal/suppression"
	"github.com/postline/postline/internal/testutil"
)

// matchCounter counts the list reads a check makes.
type matchCounter struct {
	suppression.Store
	reads atomic.Int64
}

func (m *matchCounter) Matching(ctx context.Context, domainID int64, keys []string) ([]suppression.Entry, error) {
	m.reads.Add(1)
	return m.Store.Matching(ctx, domainID, keys)
}

// The intake's check answers from the key index only when it is loaded, no
// recipient's address or domain is in it, and this process wrote nothing
// to the lists since it was read; otherwise the database decides.
func TestScreenUsesTheKeyIndexOnlyWhenSure(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := testutil.OpenDB(t, store.SQLite)
	_, dom := storetest.NewDomainRow(t, db, "alice", "alice.example")
	_, other := storetest.NewDomainRow(t, db, "bob", "bob.example")
	mc := &matchCounter{Store: store.NewSuppressions(db)}
	svc := suppression.NewService(mc, nil)
	x := suppression.NewKeyIndex(db.SuppressionWrites)
	db.OnSuppressionWrite(x.Note)
	svc.UseIndex(x)
	add := func(domainID int64, typ suppression.Type, recipient string) {
		t.Helper()
		if _, _, err := svc.Add(ctx, suppression.AddParams{DomainID: domainID, Type: typ, Recipient: recipient}); err != nil {
			t.Fatal(err)
		}
	}
	add(dom.ID, suppression.Bounce, "gone@example.net")
	add(dom.ID, suppression.Unsubscribe, "blocked.example")
	add(other.ID, suppression.Bounce, "bobs@example.net")
	load := func() {
		t.Helper()
		mark := x.Mark()
		err := x.Replace(mark, func(yield func(int64, string)) error {
			keys, err := store.NewSuppressions(db).SuppressionKeys(ctx, 0, 1000)
			for _, k := range keys {
				yield(k.DomainID, k.Recipient)
			}
			return err
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	screen := func(wantReads int64, recipients ...string) map[string]suppression.Verdict {
		t.Helper()
		before := mc.reads.Load()
		v, err := svc.Screen(ctx, dom.ID, recipients)
		if err != nil {
			t.Fatal(err)
		}
		if got := mc.reads.Load() - before; got != wantReads {
			t.Fatalf("Screen(%v) read the lists %d times, want %d", recipients, got, wantReads)
		}
		return v
	}

	screen(1, "new@example.net") // not loaded yet: the database
	load()
	if v := screen(0, "new@example.net", "Other@Example.org"); v["new@example.net"].Suppressed || v["Other@Example.org"].Suppressed {
		t.Fatalf("clean recipients: %+v", v)
	}
	screen(0, "bobs@example.net") // another domain's entry is not this domain's
	if v := screen(1, "GONE@example.net"); !v["GONE@example.net"].Suppressed {
		t.Fatal("a bounced address answered from memory as clean")
	}
	if v := screen(1, "anyone@blocked.example"); !v["anyone@blocked.example"].Suppressed {
		t.Fatal("an address at a suppressed domain answered from memory as clean")
	}

	// Written by this process after the load: the database, until a sync
	// that began after the write.
	add(dom.ID, suppression.Bounce, "late@example.net")
	if v := screen(1, "late@example.net"); !v["late@example.net"].Suppressed {
		t.Fatal("an entry this process just wrote was missed")
	}
	screen(1, "new@example.net")
	load()
	screen(0, "new@example.net")
	screen(1, "late@example.net")

	// A sync that does not read this process's write back (on PostgreSQL
	// its id may commit behind the ids a follow already read): the write
	// was noted as it ended, so the key is still there.
	add(dom.ID, suppression.Unsubscribe, "behind@example.net")
	if err := x.Add(x.Mark(), func(func(int64, string)) error { return nil }); err != nil {
		t.Fatal(err)
	}
	screen(0, "new@example.net")
	if v := screen(1, "behind@example.net"); !v["behind@example.net"].Suppressed {
		t.Fatal("an entry this process wrote, not read back by the sync, answered from memory as clean")
	}
}

// A write this process has begun but not finished when a sync takes its
// mark keeps the index untrusted after that sync: the write may commit
// after the sync read the lists.
func TestKeyIndexDistrustsAWriteInFlight(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := testutil.OpenDB(t, store.SQLite)
	_, dom := storetest.NewDomainRow(t, db, "alice", "alice.example")
	mc := &matchCounter{Store: store.NewSuppressions(db)}
	svc := suppression.NewService(mc, nil)
	var writes atomic.Uint64
	x := suppression.NewKeyIndex(writes.Load)
	svc.UseIndex(x)
	sync := func() {
		t.Helper()
		if err := x.Replace(x.Mark(), func(func(int64, string)) error { return nil }); err != nil {
			t.Fatal(err)
		}
	}
	screen := func() int64 {
		t.Helper()
		before := mc.reads.Load()
		if _, err := svc.Screen(ctx, dom.ID, []string{"a@example.net"}); err != nil {
			t.Fatal(err)
		}
		return mc.reads.Load() - before
	}
	sync()
	if n := screen(); n != 0 {
		t.Fatalf("loaded, nothing written: %d list reads, want 0", n)
	}
	writes.Add(1) // a write begins...
	sync()        // ...a sync reads the lists...
	writes.Add(1) // ...and the write commits after that read
	if n := screen(); n != 1 {
		t.Fatalf("after a write that ended past the sync's read: %d list reads, want 1", n)
	}
	sync()
	if n := screen(); n != 0 {
		t.Fatalf("after the next sync: %d list reads, want 0", n)
	}
}
