package app_test

import (
	"io"
	"net/http"
	"runtime"
	"sync"
	"testing"

	"github.com/postline/postline/internal/apitest"
	"github.com/postline/postline/internal/store"
)

// TestMailgunStatsAnswerMemory: the largest stats answer a client may ask
// for (1,000 hourly buckets of every event, ~480 KB of JSON) costs the
// server little more memory than its bytes. Built as maps and encoded
// whole, each cost ~5 MB and ~17 ms of CPU: 190 such requests at once
// took serve to 900 MB and held a send for 6 s. Not parallel: it reads
// the process's allocation count, which other tests would add to.
func TestMailgunStatsAnswerMemory(t *testing.T) {
	e := apitest.Start(t, store.SQLite, nil)
	alice := e.NewUser("alice")
	e.NewDomain(alice, "shop.example.com")
	const path = "/v3/shop.example.com/stats/total?event=accepted&event=delivered&event=failed&event=opened&event=clicked" +
		"&event=unsubscribed&event=complained&event=stored&resolution=hour&duration=999h"
	get := func() int64 {
		req, _ := http.NewRequest("GET", e.URL+path, nil)
		req.SetBasicAuth("api", alice.Key)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Error(err)
			return 0
		}
		defer resp.Body.Close()
		n, _ := io.Copy(io.Discard, resp.Body)
		if resp.StatusCode != 200 {
			t.Errorf("GET %s: %d", path, resp.StatusCode)
		}
		return n
	}
	size := get() // warm: prepared statements, connections
	if size < 400_000 {
		t.Fatalf("the answer has %d bytes; want 1,000 buckets of every event", size)
	}
	const requests = 40
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	var wg sync.WaitGroup
	for range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range requests / 4 {
				get()
			}
		}()
	}
	wg.Wait()
	runtime.ReadMemStats(&after)
	per := int64(after.TotalAlloc-before.TotalAlloc) / requests
	t.Logf("%d bytes of JSON, %d bytes allocated per request", size, per)
	if per > 2*size {
		t.Errorf("a %d-byte answer allocated %d bytes per request; want at most twice its size", size, per)
	}
}
