package hostile

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"mime/multipart"
	"net"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// endlessMX is an MX host that answers EHLO with "250-" lines that never
// end. It records how long each connection lasted: the client ends one by
// hanging up.
type endlessMX struct {
	mu    sync.Mutex
	open  map[int]time.Time     // accepted, not yet over
	spans map[int]time.Duration // connections over
}

// listen serves on addr until the test ends.
func (m *endlessMX) listen(t *testing.T, addr string) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	m.open, m.spans = map[int]time.Time{}, map[int]time.Duration{}
	line := "250-" + strings.Repeat("x", 996) + "\r\n"
	go func() {
		for n := 0; ; n++ {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			m.mu.Lock()
			m.open[n] = time.Now()
			m.mu.Unlock()
			go func() {
				defer func() {
					c.Close()
					m.mu.Lock()
					m.spans[n] = time.Since(m.open[n])
					delete(m.open, n)
					m.mu.Unlock()
				}()
				io.WriteString(c, "220 endless.test ESMTP\r\n")
				if _, err := bufio.NewReader(c).ReadString('\n'); err != nil {
					return
				}
				for {
					c.SetWriteDeadline(time.Now().Add(time.Minute))
					if _, err := io.WriteString(c, line); err != nil {
						return
					}
				}
			}()
		}
	}()
}

// longest is the longest connection so far (over or still open) and how
// many there were.
func (m *endlessMX) longest() (time.Duration, int) {
	m.mu.Lock()
	defer m.mu.Unlock()
	var max time.Duration
	for _, d := range m.spans {
		max = maxDur(max, d)
	}
	for _, at := range m.open {
		max = maxDur(max, time.Since(at))
	}
	return max, len(m.spans) + len(m.open)
}

func maxDur(a, b time.Duration) time.Duration {
	if a > b {
		return a
	}
	return b
}

// send has login send one message from domain to rcpt through the API.
func (r *rig) send(login, domain, rcpt string) error {
	var buf bytes.Buffer
	mw := multipart.NewWriter(&buf)
	mw.WriteField("from", "news@"+domain)
	mw.WriteField("to", rcpt)
	mw.WriteField("subject", "to a hostile MX")
	mw.WriteField("text", "hello")
	mw.Close()
	status, body, err := r.api(login, "POST", "/api/domains/"+domain+"/message", mw.FormDataContentType(), &buf)
	if err == nil && status != 202 {
		err = fmt.Errorf("%d %s", status, body)
	}
	return err
}

// TestEndlessReplyingMX: mallory sends to a domain whose MX answers EHLO
// with a reply that never ends. Each attempt must give up after a bounded
// reply (Postline hangs up within seconds, not at the 5-minute command
// timeout, reading and joining lines all the while), and alice's mail
// keeps flowing.
func TestEndlessReplyingMX(t *testing.T) {
	r := newRig(t, nil)
	mx := &endlessMX{}
	mx.listen(t, "127.0.0.2:"+strconv.Itoa(r.sink.Port()))
	r.dns.AddMX("endless.example.net", 10, "mx.endless.example.net")
	r.dns.AddA("mx.endless.example.net", "127.0.0.2")
	r.start()

	r.underAttack(bounds{MaxRSSMiB: 400}, func(ctx context.Context) {
		for i := range scale(20, 200) {
			if err := r.send(attacker, attackerDomin, fmt.Sprintf("u%d@endless.example.net", i)); err != nil {
				t.Errorf("mallory's send: %v", err)
				return
			}
		}
		select { // let the attempts (and retries, every 200 ms) run
		case <-ctx.Done():
		case <-time.After(8 * time.Second):
		}
	})
	longest, n := mx.longest()
	t.Logf("%d connections to the endless MX, the longest %v", n, longest.Round(time.Millisecond))
	if n == 0 {
		t.Fatal("no delivery attempt reached the endless MX")
	}
	if longest > 5*time.Second {
		t.Errorf("a connection to the endless MX lasted %v; want Postline to hang up after a bounded reply, within seconds", longest)
	}
}
