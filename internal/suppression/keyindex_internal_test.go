package suppression

import (
	"strconv"
	"testing"
)

// Keys added after the load (more than recentMax, so merged into the
// sorted base on the way) and keys loaded are all found; others are not.
func TestKeyIndexHoldsEveryKeyAcrossMerges(t *testing.T) {
	t.Parallel()
	x := NewKeyIndex(func() uint64 { return 0 })
	err := x.Replace(0, func(yield func(int64, string)) error {
		for i := range 1000 {
			yield(1, "loaded"+strconv.Itoa(i)+"@example.net")
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	const added = recentMax*2 + 123
	err = x.Add(0, func(yield func(int64, string)) error {
		for i := range added {
			yield(1, "added"+strconv.Itoa(i)+"@example.net")
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	x.Note(2, "noted@example.net")
	for _, k := range []struct {
		domain int64
		key    string
		held   bool
	}{
		{1, "loaded0@example.net", true}, {1, "loaded999@example.net", true},
		{1, "added0@example.net", true}, {1, "added" + strconv.Itoa(added-1) + "@example.net", true},
		{2, "noted@example.net", true},
		{1, "noted@example.net", false}, {2, "added0@example.net", false}, {1, "never@example.net", false},
	} {
		if got := !x.clear(k.domain, []string{k.key}); got != k.held {
			t.Errorf("domain %d %s: held %v, want %v", k.domain, k.key, got, k.held)
		}
	}
	if n := len(x.base) + len(x.recent); n != 1000+added+1 {
		t.Errorf("%d keys held, want %d", n, 1000+added+1)
	}
}
