package app_test

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/smtp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/postline/postline/internal/apitest"
	"github.com/postline/postline/internal/config"
	"github.com/postline/postline/internal/spool"
	"github.com/postline/postline/internal/store"
)

// bounceAddress gives the account's domain an authentication domain,
// sends one message and returns its envelope sender: a valid bounce (VERP)
// address, which the inbound port takes messages for without a login.
func bounceAddress(t *testing.T, e *sendEnv) string {
	t.Helper()
	if r := e.Do(apitest.Request{Method: "PUT", Path: "/api/domains/shop.example.com/auth-domain", Auth: e.user.Auth(),
		Body: map[string]string{"host": "bounces.shop.example.com"}}); r.StatusCode != 200 {
		t.Fatalf("set auth domain: %d %s", r.StatusCode, r.Body)
	}
	e.send(t, basicParts("ann@rcpt.example.net"), nil)
	msgs, err := e.sink.WaitForMessages(ctxTimeout(t, 15*time.Second), 1)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(msgs[0].From, "bounce+") {
		t.Fatalf("envelope sender %q, want a bounce+ address", msgs[0].From)
	}
	return msgs[0].From
}

// dialInbound connects to the inbound port from the loopback address src
// (127.0.0.0/8 is all ours: one test can be many clients).
func dialInbound(t *testing.T, e *sendEnv, src string) *smtp.Client {
	t.Helper()
	d := net.Dialer{Timeout: 5 * time.Second, LocalAddr: &net.TCPAddr{IP: net.ParseIP(src)}}
	conn, err := d.Dial("tcp", e.App.Inbound.Addr())
	if err != nil {
		t.Fatal(err)
	}
	c, err := smtp.NewClient(conn, "127.0.0.1")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// bigMessage is a message of about size bytes with a subject to find.
func bigMessage(subject string, size int) string {
	return "From: orders@shop.example.com\r\nTo: big@rcpt.example.net\r\nSubject: " + subject + "\r\n\r\n" + string(bodyLines(size))
}

// attachmentParts is a send with one text attachment of size bytes.
func attachmentParts(subject string, size int) []part {
	return []part{{name: "from", value: "orders@shop.example.com"}, {name: "to", value: "big@rcpt.example.net"},
		{name: "subject", value: subject}, {name: "text", value: "see the attachment"},
		{name: "attachments", filename: "big.txt", contentType: "text/plain", value: string(bodyLines(size))}}
}

// delivered counts the sink's messages with subject.
func delivered(e *sendEnv, subject string) int {
	n := 0
	for _, m := range e.sink.Messages() {
		if bytes.Contains(m.Data, []byte("Subject: "+subject+"\r\n")) {
			n++
		}
	}
	return n
}

// Issue 28's F2, scaled down: with no login, clients on 100 inbound
// sessions from five addresses each send about 0.95 MiB (just under the
// 1 MiB a body may keep in memory) to a valid bounce address and never
// send the final dot. Past its share of --spool-memory (half) the bodies
// go to disk, past its share of --spool-max-bytes they are refused: the
// heap and the spool directory stay within the budgets while /readyz
// answers within a second, and a tenant's large submission still goes
// through in the half the flood cannot take. A further message past the
// whole disk budget is refused with 452 4.3.1 at the inbound and
// submission ports and 507 at the API, naming the setting,
// with nothing stored; once the clients hang up the spool directory is
// empty and the same sessions send the same messages successfully.
//
// Not parallel: it measures the heap of the test process.
func TestInboundSpoolFlood(t *testing.T) {
	const sessions, addrs, each = 100, 5, 950 << 10
	const memBudget, diskBudget = 8 << 20, 8 << 20 // the message past the cap stays under the API's 10 MiB attachment limit
	e := startSubmission(t, store.SQLite, func(c *config.Config) {
		c.SMTPListen = "127.0.0.1:0"
		manySessions(c)
		c.SpoolMemory, c.SpoolMaxBytes = memBudget, diskBudget
		c.SubmissionMaxBytes, c.SMTPMaxBytes = 32<<20, 32<<20
	})
	bounceAddr := bounceAddress(t, e)
	spoolDir := e.Config.SpoolDir()
	body := bodyLines(each)
	before := heapInuse()

	var wg sync.WaitGroup
	var closers []io.Closer
	for i := range sessions {
		c := dialInbound(t, e, fmt.Sprintf("127.0.0.%d", 2+i%addrs))
		w, cl, err := openData(c, "", bounceAddr)
		if err != nil {
			t.Fatalf("session %d: %v", i, err)
		}
		closers = append(closers, cl)
		wg.Add(1)
		go func() {
			defer wg.Done()
			w.Write(body) // refused bodies are read to their end all the same
		}()
	}
	wg.Wait()

	// Until the server has read what was sent, and once it has: the
	// budgets hold, the heap grows by far less than what was sent, and
	// /readyz answers.
	sent := int64(sessions * each)
	var peakHeap int64
	var last, stableSince = e.App.Spool.Usage(), time.Now()
	deadline := time.Now().Add(30 * time.Second)
	for time.Since(stableSince) < time.Second {
		u := e.App.Spool.Usage()
		if u.Memory > memBudget || u.Disk > diskBudget {
			t.Fatalf("spool usage %+v passes the budgets (memory %d, disk %d)", u, memBudget, diskBudget)
		}
		if _, size := spoolFiles(t, spoolDir); size > diskBudget {
			t.Fatalf("the spool directory holds %d bytes, past --spool-max-bytes %d", size, diskBudget)
		}
		if grew := int64(heapInuse()) - int64(before); grew > peakHeap {
			peakHeap = grew
		}
		readyWithin(t, e.URL, time.Second)
		if u != last {
			last, stableSince = u, time.Now()
		}
		if time.Now().After(deadline) {
			t.Fatalf("spool usage still moving after 30 s: %+v", u)
		}
		time.Sleep(100 * time.Millisecond)
	}
	t.Logf("%d MiB sent, unfinished; spool usage %+v; heap grew by at most %d MiB", sent>>20, last, peakHeap>>20)
	if last.Disk < diskBudget/2-1<<20 || last.Disk > diskBudget/2 || last.Memory < memBudget/2-1<<20 || last.Memory > memBudget/2 {
		t.Fatalf("spool usage %+v: want the flood to have filled the inbound half of both budgets, and no more", last)
	}
	// The other half is the tenants': a 3 MiB submission goes through.
	{
		sub, err := dialSubmission(t, e, false, smtp.PlainAuth("", e.user.Login, e.user.Key, "127.0.0.1"))
		if err != nil {
			t.Fatal(err)
		}
		if err := submit(sub, "orders@shop.example.com", []string{"big@rcpt.example.net"}, bigMessage("submitted during the flood", 3<<20)); err != nil {
			t.Fatalf("a tenant's 3 MiB submission while the inbound flood holds its share: %v, want 250", err)
		}
		sub.Quit()
	}
	if bound := int64(memBudget + 16<<20); peakHeap > bound {
		t.Fatalf("heap in use grew by %d MiB while clients held %d MiB unfinished, want under %d MiB (the memory budget and buffers)",
			peakHeap>>20, sent>>20, bound>>20)
	}

	// A message larger than what is left of both budgets: refused at
	// every door, naming the setting, with nothing stored.
	// (A body keeps at most 1 MiB in memory: past what is left on disk
	// plus that, it cannot be taken; an empty spool takes it.)
	size := int(diskBudget-last.Disk) + 2<<20
	const full = "4.3.1 Insufficient system storage (spool full: --spool-max-bytes)"
	inbound := dialInbound(t, e, "127.0.0.1")
	if err := submit(inbound, "", []string{bounceAddr}, bigMessage("inbound past the cap", size)); replyCode(err) != 452 || !strings.Contains(err.Error(), full) {
		t.Fatalf("inbound, %d bytes past the disk budget: %v, want 452 %s", size, err, full)
	}
	sub, err := dialSubmission(t, e, false, smtp.PlainAuth("", e.user.Login, e.user.Key, "127.0.0.1"))
	if err != nil {
		t.Fatal(err)
	}
	if err := submit(sub, "orders@shop.example.com", []string{"big@rcpt.example.net"}, bigMessage("submitted past the cap", size)); replyCode(err) != 452 || !strings.Contains(err.Error(), full) {
		t.Fatalf("submission, %d bytes past the disk budget: %v, want 452 %s", size, err, full)
	}
	r := e.send(t, attachmentParts("uploaded past the cap", size), nil)
	if r.StatusCode != http.StatusInsufficientStorage || !strings.Contains(string(r.Body), "--spool-max-bytes") {
		t.Fatalf("send, a %d-byte attachment past the disk budget: %d %s, want 507 naming --spool-max-bytes", size, r.StatusCode, r.Body)
	}
	if u := e.App.Spool.Usage(); u.Disk > diskBudget {
		t.Fatalf("after the refusals: %+v", u)
	}

	// The clients hang up: every spool file goes, every budget comes back.
	for _, c := range closers {
		c.Close()
	}
	deadline = time.Now().Add(10 * time.Second)
	for {
		n, _ := spoolFiles(t, spoolDir)
		u := e.App.Spool.Usage()
		if n == 0 && u.Disk == 0 && u.Memory == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d spool files, usage %+v 10 s after the clients disconnected, want none", n, u)
		}
		time.Sleep(20 * time.Millisecond)
	}

	// The refused sessions are still usable: the same messages now go
	// through, and were stored once (the refusals stored nothing).
	inbound.Reset() // inbound's share is half the budget: a message within it
	if err := submit(inbound, "", []string{bounceAddr}, bigMessage("inbound past the cap", diskBudget/2-1<<20)); err != nil {
		t.Fatalf("inbound, a message within its share once room is made: %v, want 250", err)
	}
	sub.Reset()
	if err := submit(sub, "orders@shop.example.com", []string{"big@rcpt.example.net"}, bigMessage("submitted past the cap", size)); err != nil {
		t.Fatalf("submission, the same message once room is made: %v, want 250", err)
	}
	if r := e.send(t, attachmentParts("uploaded past the cap", size), nil); r.StatusCode != http.StatusAccepted {
		t.Fatalf("send, the same request once room is made: %d %s, want 202", r.StatusCode, r.Body)
	}
	for _, subject := range []string{"submitted past the cap", "uploaded past the cap"} {
		deadline := time.Now().Add(15 * time.Second)
		for delivered(e, subject) == 0 && time.Now().Before(deadline) {
			time.Sleep(50 * time.Millisecond)
		}
		if n := delivered(e, subject); n != 1 {
			t.Errorf("%q delivered %d times, want once (the refused attempt stored nothing)", subject, n)
		}
	}
}

// While bodies being processed hold --spool-processing-memory, a body
// that waited on disk waits at most 2 s for its share and is then refused
// for now: 451 4.3.0 at the SMTP ports, 503 with Retry-After at the API,
// naming the setting. A body kept in memory does not wait, and once the
// budget is given back the same messages go through.
func TestSpoolProcessingBudgetAtTheDoors(t *testing.T) {
	t.Parallel()
	const budget, size = 2 << 20, 3 << 19 // 1.5 MiB: past the 1 MiB a body keeps in memory
	e := startSubmission(t, store.SQLite, func(c *config.Config) {
		c.SMTPListen = "127.0.0.1:0"
		c.SpoolProcessingMemory = budget
		c.SubmissionMaxBytes = 8 << 20
	})
	bounceAddr := bounceAddress(t, e)
	// A large body being processed: larger than the budget, it holds all of it.
	held, _, err := e.App.Spool.ReadAll(context.Background(), bytes.NewReader(bodyLines(3<<20)))
	if err != nil {
		t.Fatal(err)
	}
	defer held.Close()
	if u := e.App.Spool.Usage(); u.Processing != budget {
		t.Fatalf("usage %+v, want the whole processing budget held", u)
	}

	const busy = "4.3.0 Too many large messages being processed at once (--spool-processing-memory)"
	timed := func(door string, fn func() error) error {
		start := time.Now()
		err := fn()
		if took := time.Since(start); took < 1500*time.Millisecond || took > 10*time.Second {
			t.Errorf("%s: refused after %v, want after waiting about 2 s", door, took)
		}
		return err
	}
	inbound := dialInbound(t, e, "127.0.0.1")
	if err := timed("inbound", func() error {
		return submit(inbound, "", []string{bounceAddr}, bigMessage("inbound while busy", size))
	}); replyCode(err) != 451 || !strings.Contains(err.Error(), busy) {
		t.Fatalf("inbound while the budget is held: %v, want 451 %s", err, busy)
	}
	sub, err := dialSubmission(t, e, false, smtp.PlainAuth("", e.user.Login, e.user.Key, "127.0.0.1"))
	if err != nil {
		t.Fatal(err)
	}
	if err := timed("submission", func() error {
		return submit(sub, "orders@shop.example.com", []string{"big@rcpt.example.net"}, bigMessage("submitted while busy", size))
	}); replyCode(err) != 451 || !strings.Contains(err.Error(), busy) {
		t.Fatalf("submission while the budget is held: %v, want 451 %s", err, busy)
	}
	var r *apitest.Response
	timed("send", func() error { r = e.send(t, attachmentParts("uploaded while busy", size), nil); return nil })
	if r.StatusCode != http.StatusServiceUnavailable || r.Header.Get("Retry-After") == "" || !strings.Contains(string(r.Body), "--spool-processing-memory") {
		t.Fatalf("send while the budget is held: %d (Retry-After %q) %s, want 503 with Retry-After naming --spool-processing-memory",
			r.StatusCode, r.Header.Get("Retry-After"), r.Body)
	}
	// A small message stays in memory and needs no processing budget.
	sub.Reset()
	if err := submit(sub, "orders@shop.example.com", []string{"big@rcpt.example.net"}, bigMessage("small while busy", 10<<10)); err != nil {
		t.Fatalf("a small message while the budget is held: %v, want 250", err)
	}

	held.Close()
	inbound.Reset()
	if err := submit(inbound, "", []string{bounceAddr}, bigMessage("inbound while busy", size)); err != nil {
		t.Fatalf("inbound once the budget is back: %v, want 250", err)
	}
	sub.Reset()
	if err := submit(sub, "orders@shop.example.com", []string{"big@rcpt.example.net"}, bigMessage("submitted while busy", size)); err != nil {
		t.Fatalf("submission once the budget is back: %v, want 250", err)
	}
	if r := e.send(t, attachmentParts("uploaded while busy", size), nil); r.StatusCode != http.StatusAccepted {
		t.Fatalf("send once the budget is back: %d %s, want 202", r.StatusCode, r.Body)
	}
	if u := e.App.Spool.Usage(); u != (spool.Usage{}) {
		t.Fatalf("usage %+v once every message is processed, want none", u)
	}
}
