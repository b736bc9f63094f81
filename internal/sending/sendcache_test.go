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

// Attachments count against a byte budget: the oldest sends go first, and
// the newest stays whatever its size.
func TestSendCacheBoundsAttachmentBytes(t *testing.T) {
	c := newSendCache(nil, 8)
	c.budget = 100
	file := func(n int) []Attachment { return []Attachment{{Filename: "f", Data: make([]byte, n)}} }
	c.put(Send{ID: 1}, file(60))
	c.put(Send{ID: 2}, file(30))
	if !c.has(1) || !c.has(2) || c.bytes != 90 {
		t.Fatalf("within the budget: kept 1 %v, 2 %v, %d bytes; want both, 90", c.has(1), c.has(2), c.bytes)
	}
	c.put(Send{ID: 3}, file(30)) // 120 > 100: the oldest goes
	if c.has(1) || !c.has(2) || !c.has(3) || c.bytes != 60 {
		t.Fatalf("over the budget: kept 1 %v, 2 %v, 3 %v, %d bytes; want 2 and 3, 60", c.has(1), c.has(2), c.has(3), c.bytes)
	}
	c.put(Send{ID: 4}, file(500)) // alone over the budget: kept, everything older goes
	if !c.has(4) || c.has(2) || c.has(3) || c.bytes != 500 {
		t.Fatalf("a send over the budget: kept 4 %v, 2 %v, 3 %v, %d bytes; want only 4, 500", c.has(4), c.has(2), c.has(3), c.bytes)
	}
	c.put(Send{ID: 4}, file(500)) // put again: counted once
	c.forget(4)
	if c.bytes != 0 || len(c.items) != 0 {
		t.Fatalf("after forgetting the last send: %d bytes, %d sends; want 0, 0", c.bytes, len(c.items))
	}
}
