package validation

import (
	"context"
	"hash/maphash"
	"sync"
)

// Accounts that a validation is made for (ValidateAs). Bounce history is
// an account's own: another customer's bounces must not change the answer
// a caller gets, or the answer would tell it who mailed that address.
const (
	// NoAccount validates without any sending history.
	NoAccount int64 = 0
	// AllAccounts uses every account's history: the operator's own tools.
	AllAccounts int64 = -1
)

// History is an in-memory BounceHistory: which accounts saw each address
// bounce permanently. Validation asks it for every verdict, cached or not,
// so it must answer without I/O; its owner loads it and feeds it changes
// (Add, Replace). Addresses are kept as 64-bit hashes: a collision costs
// one wrong spamtrap feature, and memory stays near 40 bytes an entry.
type History struct {
	seed maphash.Seed
	// Shared makes every account's bounces count for every caller (one
	// organisation running the server: --validation-shared-history).
	shared bool

	mu    sync.RWMutex
	one   map[uint64]int64   // address → the one account it bounced for
	multi map[uint64][]int64 // addresses that bounced for several accounts
}

// NewHistory returns an empty History.
func NewHistory(shared bool) *History {
	return &History{seed: maphash.MakeSeed(), shared: shared, one: map[uint64]int64{}, multi: map[uint64][]int64{}}
}

func (h *History) hash(addr string) uint64 { return maphash.String(h.seed, addr) }

// HardBounced implements BounceHistory.
func (h *History) HardBounced(_ context.Context, account int64, addr string) (bool, error) {
	if account == NoAccount {
		return false, nil
	}
	k := h.hash(addr)
	h.mu.RLock()
	defer h.mu.RUnlock()
	if a, ok := h.one[k]; ok {
		return a == account || account == AllAccounts || h.shared, nil
	}
	if list, ok := h.multi[k]; ok {
		if account == AllAccounts || h.shared {
			return true, nil
		}
		for _, a := range list {
			if a == account {
				return true, nil
			}
		}
	}
	return false, nil
}

// Add records that addr bounced for account.
func (h *History) Add(account int64, addr string) {
	k := h.hash(addr)
	h.mu.Lock()
	defer h.mu.Unlock()
	h.add(h.one, h.multi, k, account)
}

func (h *History) add(one map[uint64]int64, multi map[uint64][]int64, k uint64, account int64) {
	if a, ok := one[k]; ok {
		if a != account {
			delete(one, k)
			multi[k] = []int64{a, account}
		}
		return
	}
	if list, ok := multi[k]; ok {
		for _, a := range list {
			if a == account {
				return
			}
		}
		multi[k] = append(list, account)
		return
	}
	one[k] = account
}

// Replace swaps the whole history for what each calls yield with (a
// reload after deletions).
func (h *History) Replace(each func(yield func(account int64, addr string)) error) error {
	one, multi := map[uint64]int64{}, map[uint64][]int64{}
	if err := each(func(account int64, addr string) { h.add(one, multi, h.hash(addr), account) }); err != nil {
		return err
	}
	h.mu.Lock()
	h.one, h.multi = one, multi
	h.mu.Unlock()
	return nil
}

// Len is the number of addresses held.
func (h *History) Len() int {
	h.mu.RLock()
	defer h.mu.RUnlock()
	return len(h.one) + len(h.multi)
}
