package hostile

import (
	"bufio"
	"context"
	"fmt"
	"net"
	"strconv"
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
			c, status, err := keepAlive("127.0.0.3", r.addr)
			if c == nil {
				other.Add(1)
				continue
			}
			mu.Lock()
			conns = append(conns, c)
			mu.Unlock()
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

// TestHTTPIdleFromManyAddresses (the second outside review): idle
// keep-alive connections from many addresses, each within
// --http-max-connections-per-ip, fill --http-max-connections; before
// eviction every other client, /readyz included, read 503 for as long as
// they were held. Now a new connection closes the one idle longest:
// /readyz and alice are answered throughout, and the listener never holds
// more than its bound.
func TestHTTPIdleFromManyAddresses(t *testing.T) {
	t.Parallel()
	total := scale(400, 2000)
	addrs := total/200 + 2 // past the total bound, each address within its own
	r := newRig(t, map[string]string{"POSTLINE_HTTP_MAX_CONNECTIONS": strconv.Itoa(total)})
	r.start()
	var answered, other atomic.Int64
	var mu sync.Mutex
	var conns []net.Conn
	defer func() {
		for _, c := range conns {
			c.Close()
		}
	}()
	r.underAttack(bounds{MaxRSSMiB: 300}, func(ctx context.Context) {
		var wg sync.WaitGroup
		for a := range addrs {
			wg.Go(func() {
				for i := 0; i < 200 && ctx.Err() == nil; i++ {
					c, status, err := keepAlive(fmt.Sprintf("127.0.4.%d", 2+a), r.addr)
					if c == nil {
						other.Add(1)
						continue
					}
					mu.Lock()
					conns = append(conns, c)
					mu.Unlock()
					if err == nil && strings.HasPrefix(status, "HTTP/1.1 200") {
						answered.Add(1) // now an idle keep-alive connection
					} else {
						other.Add(1)
					}
				}
			})
		}
		wg.Wait()
		select { // hold them while the checks run
		case <-ctx.Done():
		case <-time.After(2 * time.Second):
		}
	})
	open := 0
	for _, c := range conns {
		c.SetReadDeadline(time.Now().Add(50 * time.Millisecond))
		if _, err := c.Read(make([]byte, 1)); isTimeout(err) {
			open++ // still held by the server
		}
	}
	t.Logf("%d of %d connections answered, %d other; %d still open at the end", answered.Load(), addrs*200, other.Load(), open)
	if open > total {
		t.Errorf("%d idle connections still open, want at most --http-max-connections = %d", open, total)
	}
}

func isTimeout(err error) bool {
	ne, ok := err.(net.Error)
	return ok && ne.Timeout()
}

// keepAlive connects from src, asks for /healthz and reads the status line,
// leaving the connection open (an idle keep-alive one when answered); c is
// nil when the connection failed.
func keepAlive(src, addr string) (c net.Conn, status string, err error) {
	if c, err = dialFrom(src, addr); err != nil {
		return nil, "", err
	}
	c.SetDeadline(time.Now().Add(10 * time.Second))
	c.Write([]byte("GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n"))
	status, err = bufio.NewReader(c).ReadString('\n')
	return c, status, err
}
