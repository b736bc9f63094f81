package suppression

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"testing"
)

// fakeLists is a store's lists: rows in id order and the count of
// removals, as the store keeps them.
type fakeLists struct {
	mu      sync.Mutex
	rows    []fakeRow
	next    int64
	removed int64
	fail    error // every read fails with it when set
}

type fakeRow struct {
	id, under int64
	recipient string
}

func (l *fakeLists) add(under int64, recipient string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.next++
	l.rows = append(l.rows, fakeRow{l.next, under, recipient})
}

func (l *fakeLists) remove(recipient string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.rows = slices.DeleteFunc(l.rows, func(r fakeRow) bool { return r.recipient == recipient })
	l.removed++
}

func (l *fakeLists) page(_ context.Context, after int64, limit int) ([]fakeRow, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.fail != nil {
		return nil, l.fail
	}
	var out []fakeRow
	for _, r := range l.rows {
		if r.id > after && len(out) < limit {
			out = append(out, r)
		}
	}
	return out, nil
}

func (l *fakeLists) removals(context.Context) (int64, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.removed, l.fail
}

func (l *fakeLists) pager() Pager[fakeRow] {
	return Pager[fakeRow]{Page: l.page, Row: func(r fakeRow) (int64, int64, string) { return r.id, r.under, r.recipient }}
}

// fakeSet is a bounce history: a set of recipients filed by account.
type fakeSet map[string]int64

func (s *fakeSet) Replace(each func(yield func(int64, string)) error) error {
	n := fakeSet{}
	if err := each(func(under int64, r string) { n[r] = under }); err != nil {
		return err
	}
	*s = n
	return nil
}

func (s *fakeSet) Add(under int64, r string) { (*s)[r] = under }

// The follower loads every copy at Start (past a page of the store), adds
// what is written after, and reloads once the store counts a removal.
func TestListFollowerFollowsAdditionsAndRemovals(t *testing.T) {
	t.Parallel()
	lists := &fakeLists{}
	for range followPage + 5 {
		lists.add(1, "old@example.net")
	}
	lists.add(2, "gone@example.net")
	set := &fakeSet{}
	x := NewKeyIndex(func() uint64 { return 0 })
	var logs bytes.Buffer
	f := NewListFollower(ListFollowerConfig{Removals: lists.removals, Logger: slog.New(slog.NewTextHandler(&logs, nil)),
		Copies: []*ListCopy{SetCopy("bounce history", set, lists.pager()), IndexCopy(x, lists.pager())}})
	ctx := context.Background()
	if err := f.Start(ctx); err != nil {
		t.Fatal(err)
	}
	f.Stop() // the test runs the passes itself
	holds := func(under int64, r string) (inSet, inIndex bool) {
		_, inSet = (*set)[r]
		return inSet, !x.clear(under, []string{r})
	}
	if s, i := holds(2, "gone@example.net"); !s || !i {
		t.Fatalf("after Start, the row past the first page: in the set %v, in the index %v; want both", s, i)
	}

	lists.add(3, "new@example.net")
	f.runOnce(ctx)
	if s, i := holds(3, "new@example.net"); !s || !i {
		t.Errorf("a row added after Start, one pass later: in the set %v, in the index %v; want both", s, i)
	}

	lists.remove("gone@example.net")
	f.runOnce(ctx)
	if s, i := holds(2, "gone@example.net"); s || i {
		t.Errorf("a removed row, one pass later: in the set %v, in the index %v; want neither", s, i)
	}
	if s, _ := holds(3, "new@example.net"); !s {
		t.Error("the reload after a removal lost a row still listed")
	}

	lists.fail = errors.New("database gone")
	f.runOnce(ctx)
	if got := logs.String(); !strings.Contains(got, `"bounce history not updated" error="database gone"`) ||
		!strings.Contains(got, `"suppression key index not updated"`) {
		t.Errorf("a failed pass logged %q; want each copy named with the error", got)
	}
}
