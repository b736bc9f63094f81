package sending

import "testing"

// A full send cache drops its oldest half, so the sends prefetch just put
// for the deliveries about to be attempted stay.
func TestSendCacheDropsTheOldest(t *testing.T) {
	c := newSendCache(nil, 8)
	for id := int64(1); id <= sendCacheSize; id++ {
		c.put(Send{ID: id}, nil)
	}
	c.put(Send{ID: 1000}, nil)
	if len(c.items) != sendCacheSize/2+1 {
		t.Fatalf("%d sends kept after adding to a full cache, want %d", len(c.items), sendCacheSize/2+1)
	}
	for id := int64(1); id <= sendCacheSize; id++ {
		if c.has(id) != (id > sendCacheSize/2) {
			t.Fatalf("send %d kept = %v; want only the newest half (%d..%d) and the new one", id, c.has(id),
				sendCacheSize/2+1, sendCacheSize)
		}
	}
	if !c.has(1000) {
		t.Fatal("the send just added was dropped")
	}
}

// With many workers the cache grows with them: the sends of everything
// claimed and not yet built (twice the slots) survive an eviction.
func TestSendCacheGrowsWithTheWorkers(t *testing.T) {
	c := newSendCache(nil, 100)
	for id := int64(1); id <= 600; id++ {
		c.put(Send{ID: id}, nil)
	}
	for id := int64(401); id <= 600; id++ {
		if !c.has(id) {
			t.Fatalf("send %d of the newest 200 (twice 100 slots) was dropped", id)
		}
	}
}
