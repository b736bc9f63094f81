package suppression

import (
	"hash/maphash"
	"slices"
	"sync"
)

// KeyIndex lets the intake's check skip the database when no recipient
// can match any entry. It holds a 64-bit hash of every entry's key (domain
// and recipient; suppressions and whitelist alike), built and followed by
// a ListFollower from the lists (IndexCopy: every 2 s, and a full reload after
// removals). A key it holds, or any doubt, sends the check to the
// database, which decides; only "no entry for any of these keys" is
// answered from memory.
//
// What may be missed:
//   - an entry this process writes: never. From the moment the write
//     begins until a sync that began after it ended, Screen goes to the
//     database (the store's write count tells); the written key is noted
//     in the index as the write ends, so the sync need not read it back;
//   - an entry another process wrote (the CLI, another serve) since the
//     last sync: for up to the follow interval (on PostgreSQL, where ids
//     may commit out of order, one committed far behind the ids already
//     read: until the next full reload). The delivery worker checks
//     the lists again before every attempt, in the database, so such a
//     recipient is still never sent to: it is logged failed, suppressed,
//     at its attempt instead of at intake.
type KeyIndex struct {
	seed   maphash.Seed
	writes func() uint64 // this process's suppression writes, begun and ended

	mu sync.RWMutex
	// The keys: base sorted (8 bytes a key; a map would take ~38), recent
	// the ones added since it was built, merged into it when many.
	base   []uint64
	recent map[uint64]struct{}
	synced uint64 // the write count taken before the last sync read the lists
	ready  bool   // loaded, and not over keyIndexMax
	// noted are the keys this process wrote while a Replace was reading:
	// the new set gets them too. nil when no Replace is under way.
	noted map[uint64]struct{}
}

const (
	// keyIndexMax bounds the keys held (16 MB); a larger list set is
	// answered from the database.
	keyIndexMax = 2_000_000
	// recentMax is how many keys are added before they are merged into
	// the sorted base.
	recentMax = 1 << 14
)

// NewKeyIndex returns an empty index (not ready: Screen asks the database
// until it is loaded). writes reports the store's suppression write count.
func NewKeyIndex(writes func() uint64) *KeyIndex {
	return &KeyIndex{seed: maphash.MakeSeed(), writes: writes, recent: map[uint64]struct{}{}}
}

func (x *KeyIndex) hash(domainID int64, key string) uint64 {
	return maphash.String(x.seed, key) ^ uint64(domainID)*0x9e3779b97f4a7c15
}

// Mark is the write count a sync must take before it reads the lists, and
// pass to Add or Replace.
func (x *KeyIndex) Mark() uint64 { return x.writes() }

// add adds h; the caller holds mu.
func (x *KeyIndex) add(h uint64) {
	if _, found := slices.BinarySearch(x.base, h); found {
		return
	}
	x.recent[h] = struct{}{}
	if len(x.recent) >= recentMax {
		x.base = mergeSorted(x.base, x.recent)
		x.recent = map[uint64]struct{}{}
	}
	if len(x.base)+len(x.recent) > keyIndexMax {
		x.ready = false
	}
}

// has reports whether h is held; the caller holds mu.
func (x *KeyIndex) has(h uint64) bool {
	if _, ok := x.recent[h]; ok {
		return true
	}
	_, found := slices.BinarySearch(x.base, h)
	return found
}

// mergeSorted returns base with more added, sorted, without duplicates.
func mergeSorted(base []uint64, more map[uint64]struct{}) []uint64 {
	out := make([]uint64, 0, len(base)+len(more))
	out = append(out, base...)
	for h := range more {
		out = append(out, h)
	}
	slices.Sort(out)
	return slices.Compact(out)
}

// Add adds the entries each yields, read after mark was taken (nothing
// when each fails).
func (x *KeyIndex) Add(mark uint64, each func(yield func(domainID int64, key string)) error) error {
	var keys []uint64
	if err := each(func(domainID int64, key string) { keys = append(keys, x.hash(domainID, key)) }); err != nil {
		return err
	}
	x.mu.Lock()
	defer x.mu.Unlock()
	for _, h := range keys {
		x.add(h)
	}
	x.synced = mark
	return nil
}

// Note adds a key this process has just written (store.DB's
// OnSuppressionWrite): its own writes never depend on reading the lists
// back, whose ids may commit out of order on PostgreSQL.
func (x *KeyIndex) Note(domainID int64, key string) {
	h := x.hash(domainID, key)
	x.mu.Lock()
	defer x.mu.Unlock()
	x.add(h)
	if x.noted != nil {
		x.noted[h] = struct{}{}
	}
}

// Replace swaps in every entry (a load or reload), read after mark was
// taken, and the keys noted meanwhile.
func (x *KeyIndex) Replace(mark uint64, each func(yield func(domainID int64, key string)) error) error {
	x.mu.Lock()
	x.noted = map[uint64]struct{}{}
	x.mu.Unlock()
	var keys []uint64
	err := each(func(domainID int64, key string) { keys = append(keys, x.hash(domainID, key)) })
	slices.Sort(keys)
	keys = slices.Compact(keys)
	x.mu.Lock()
	defer x.mu.Unlock()
	noted := x.noted
	x.noted = nil
	if err != nil {
		return err
	}
	x.base, x.recent, x.synced = mergeSorted(keys, noted), map[uint64]struct{}{}, mark
	x.ready = len(x.base) <= keyIndexMax
	return nil
}

// clear reports whether it is sure that no entry of domainID has any of keys.
func (x *KeyIndex) clear(domainID int64, keys []string) bool {
	x.mu.RLock()
	defer x.mu.RUnlock()
	if !x.ready || x.writes() != x.synced {
		return false
	}
	for _, k := range keys {
		if x.has(x.hash(domainID, k)) {
			return false
		}
	}
	return true
}
