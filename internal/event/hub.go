package event

import "sync"

// hub is the in-process fan-out. It carries wake-ups, not entries: a woken
// follower reads what is new from the store with its own filter, so slow
// followers cost nothing here and a burst of inserts coalesces into one
// wake-up.
type hub struct {
	mu   sync.Mutex
	subs map[int64]map[chan struct{}]struct{}
}

func newHub() *hub { return &hub{subs: map[int64]map[chan struct{}]struct{}{}} }

// subscribe returns a channel that receives (at most one pending) wake-up
// whenever the domain may have new entries, and the function to stop.
func (h *hub) subscribe(domainID int64) (<-chan struct{}, func()) {
	ch := make(chan struct{}, 1)
	h.mu.Lock()
	if h.subs[domainID] == nil {
		h.subs[domainID] = map[chan struct{}]struct{}{}
	}
	h.subs[domainID][ch] = struct{}{}
	h.mu.Unlock()
	return ch, func() {
		h.mu.Lock()
		delete(h.subs[domainID], ch)
		if len(h.subs[domainID]) == 0 {
			delete(h.subs, domainID)
		}
		h.mu.Unlock()
	}
}

func (h *hub) publish(domainIDs ...int64) {
	h.mu.Lock()
	defer h.mu.Unlock()
	for _, id := range domainIDs {
		for ch := range h.subs[id] {
			select {
			case ch <- struct{}{}:
			default: // a wake-up is already pending
			}
		}
	}
}

func (h *hub) publishAll() {
	h.mu.Lock()
	ids := make([]int64, 0, len(h.subs))
	for id := range h.subs {
		ids = append(ids, id)
	}
	h.mu.Unlock()
	h.publish(ids...)
}
