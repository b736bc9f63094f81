package suppression

import (
	"hash/maphash"
	"sync"
)

// KeyIndex lets the intake's check skip the database when no recipient
// can match any entry. It holds a 64-bit hash of every entry's key (domain
// and recipient; suppressions and whitelist alike), built and followed by
// its owner from the lists (the app: every 2 s, and a full reload after
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

	mu     sync.RWMutex
	keys   map[uint64]struct{}
	synced uint64 // the write count taken before the last sync read the lists
	ready  bool   // loaded, and not over keyIndexMax
	// noted are the keys this process wrote while a Replace was reading:
	// the new map gets them too. nil when no Replace is under way.
	noted map[uint64]struct{}
}

// keyIndexMax bounds the keys held (about 20 MB); a larger list set is
// answered from the database.
const keyIndexMax = 2_000_000

// NewKeyIndex returns an empty index (not ready: Screen asks the database
// until it is loaded). writes reports the store's suppression write count.
func NewKeyIndex(writes func() uint64) *KeyIndex {
	return &KeyIndex{seed: maphash.MakeSeed(), writes: writes, keys: map[uint64]struct{}{}}
}

func (x *KeyIndex) hash(domainID int64, key string) uint64 {
	return maphash.String(x.seed, key) ^ uint64(domainID)*0x9e3779b97f4a7c15
}

// Mark is the write count a sync must take before it reads the lists, and
// pass to Add or Replace.
func (x *KeyIndex) Mark() uint64 { return x.writes() }

// Add adds entries read after mark was taken.
func (x *KeyIndex) Add(mark uint64, each func(yield func(domainID int64, key string))) {
	x.mu.Lock()
	defer x.mu.Unlock()
	each(func(domainID int64, key string) { x.keys[x.hash(domainID, key)] = struct{}{} })
	x.synced = mark
	if len(x.keys) > keyIndexMax {
		x.ready = false
	}
}

// Note adds a key this process has just written (store.DB's
// OnSuppressionWrite): its own writes never depend on reading the lists
// back, whose ids may commit out of order on PostgreSQL.
func (x *KeyIndex) Note(domainID int64, key string) {
	h := x.hash(domainID, key)
	x.mu.Lock()
	defer x.mu.Unlock()
	x.keys[h] = struct{}{}
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
	keys := map[uint64]struct{}{}
	err := each(func(domainID int64, key string) { keys[x.hash(domainID, key)] = struct{}{} })
	x.mu.Lock()
	defer x.mu.Unlock()
	noted := x.noted
	x.noted = nil
	if err != nil {
		return err
	}
	for h := range noted {
		keys[h] = struct{}{}
	}
	x.keys, x.synced, x.ready = keys, mark, len(keys) <= keyIndexMax
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
		if _, ok := x.keys[x.hash(domainID, k)]; ok {
			return false
		}
	}
	return true
}
