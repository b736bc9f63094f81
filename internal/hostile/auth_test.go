package hostile

import (
	"context"
	"net/http"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// TestWrongKeyFlood: parallel requests with wrong API keys (no login
// needed) are refused cheaply; the server stays ready and alice sends.
func TestWrongKeyFlood(t *testing.T) {
	t.Parallel()
	r := newRig(t, nil)
	r.start()
	n := scale(2000, 100000)
	var refused, other atomic.Int64
	r.underAttack(bounds{MaxRSSMiB: 300}, func(ctx context.Context) {
		c := &http.Client{Timeout: 10 * time.Second}
		var wg sync.WaitGroup
		next := atomic.Int64{}
		for w := 0; w < 32; w++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for next.Add(1) <= int64(n) && ctx.Err() == nil {
					req, _ := http.NewRequestWithContext(ctx, "GET", "http://"+r.addr+"/api/domains", nil)
					req.SetBasicAuth(victim, "pl_wrongwrongwrongwrongwrongwrongwrongwrongwro")
					resp, err := c.Do(req)
					if err != nil {
						other.Add(1)
						continue
					}
					resp.Body.Close()
					if resp.StatusCode == 401 || resp.StatusCode == 429 {
						refused.Add(1)
					} else {
						other.Add(1)
					}
				}
			}()
		}
		wg.Wait()
	})
	if refused.Load() == 0 || other.Load() > 0 {
		t.Errorf("wrong keys: %d refused (401/429), %d other answers or errors; want every one refused", refused.Load(), other.Load())
	}
}
