package hostile

import (
	"bufio"
	"context"
	"net"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// TestHTTPConnectionFlood (the outside review of the bounds): one client
// opens 2,000 keep-alive connections to the API, as many as the whole
// listener's bound, and holds them. Past --http-max-connections-per-ip
// (200) a connection reads a 503 naming it, and /readyz and alice's sends
// from another address are answered.
func TestHTTPConnectionFlood(t *testing.T) {
	t.Parallel()
	r := newRig(t, nil)
	r.start()
	n := scale(2000, 2000)
	var held, refused, other atomic.Int64
	var mu sync.Mutex
	var conns []net.Conn
	defer func() {
		for _, c := range conns {
			c.Close()
		}
	}()
	r.underAttack(bounds{MaxRSSMiB: 300}, func(ctx context.Context) {
		for i := 0; i < n && ctx.Err() == nil; i++ {
			c, err := dialFrom("127.0.0.3", r.addr)
			if err != nil {
				other.Add(1)
				continue
			}
			mu.Lock()
			conns = append(conns, c)
			mu.Unlock()
			c.SetDeadline(time.Now().Add(10 * time.Second))
			c.Write([]byte("GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n"))
			status, err := bufio.NewReader(c).ReadString('\n')
			switch {
			case strings.HasPrefix(status, "HTTP/1.1 503"):
				refused.Add(1)
				c.Close()
			case err == nil:
				held.Add(1) // answered, now an idle keep-alive connection
			default:
				other.Add(1)
			}
		}
		select {
		case <-ctx.Done():
		case <-time.After(2 * time.Second):
		}
	})
	t.Logf("%d held, %d refused with 503, %d other", held.Load(), refused.Load(), other.Load())
	if held.Load() > 200 || refused.Load() < int64(n-200) {
		t.Errorf("one address held %d connections (%d refused), want at most --http-max-connections-per-ip = 200", held.Load(), refused.Load())
	}
}
