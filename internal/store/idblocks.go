package store

import (
	"context"
	"sync"
)

// idBlock is how many sends and deliveries ids a PostgreSQL process takes
// from their sequences at once.
const idBlock = 256

// idReserve keeps ids taken from the sends and deliveries sequences ahead
// of need. A group commit on PostgreSQL needs its rows' ids before its one
// pipelined round trip (rows refer to each other); asking the sequences
// for each group was a second round trip on every commit. Taken in
// blocks, they cost one round trip per idBlock messages.
//
// Ids stay unique and increase within a process; across processes they no
// longer follow commit order, which nothing relies on for sends and
// deliveries (the log's order comes from the events' own ids). Ids held
// when a process stops are never used: sequences have gaps anyway.
type idReserve struct {
	mu                sync.Mutex
	sends, deliveries []int64
}

// take returns sends and deliveries ids, refilling from the sequences when
// short (holding the lock: whoever waits needs ids too).
func (r *idReserve) take(ctx context.Context, q Querier, sends, deliveries int) (sendIDs, deliveryIDs []int64, err error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if len(r.sends) < sends || len(r.deliveries) < deliveries {
		s, d, err := nextIDsPG(ctx, q, refill(len(r.sends), sends), refill(len(r.deliveries), deliveries))
		if err != nil {
			return nil, nil, err
		}
		r.sends, r.deliveries = append(r.sends, s...), append(r.deliveries, d...)
	}
	sendIDs, r.sends = r.sends[:sends:sends], r.sends[sends:]
	deliveryIDs, r.deliveries = r.deliveries[:deliveries:deliveries], r.deliveries[deliveries:]
	return sendIDs, deliveryIDs, nil
}

// refill is how many ids to take for a need of want with have held: none
// while enough are held, else the lack and a block.
func refill(have, want int) int {
	if have >= want {
		return 0
	}
	return want - have + idBlock
}
