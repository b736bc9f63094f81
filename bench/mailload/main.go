// Command mailload measures mail throughput end to end, out of process, for
// BENCHMARKS.md: an SMTP sink that counts what arrives (how much of it
// carries a DKIM signature, and how many arrivals repeat a Message-ID
// already seen: a message sent twice), and an SMTP client load that
// submits N messages on C connections, spread over one or more servers,
// and waits until the sink has them all. Everything listens on and talks
// to loopback only.
//
//	mailload sink -addr 127.0.0.1:2626 -status 127.0.0.1:2627
//	mailload send -addr 127.0.0.1:2587,127.0.0.1:2588 -auth bench:KEY -n 2000 -c 8 \
//	    -from orders@shop.example -status 127.0.0.1:2627
package main

import (
	"bufio"
	"bytes"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/emersion/go-sasl"
	"github.com/emersion/go-smtp"
)

func main() {
	if len(os.Args) < 2 {
		fmt.Fprintln(os.Stderr, "usage: mailload sink|send [flags]")
		os.Exit(2)
	}
	var err error
	switch os.Args[1] {
	case "sink":
		err = sink(os.Args[2:])
	case "send":
		err = send(os.Args[2:])
	default:
		err = fmt.Errorf("unknown mode %q: want sink or send", os.Args[1])
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "mailload:", err)
		os.Exit(1)
	}
}

func loopback(addr string) error {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return err
	}
	if ip := net.ParseIP(host); ip == nil || !ip.IsLoopback() {
		return fmt.Errorf("%s is not a loopback address", addr)
	}
	return nil
}

// counts is what the sink has received so far.
type counts struct {
	messages atomic.Int64
	signed   atomic.Int64 // with a DKIM-Signature header

	mu         sync.Mutex
	ids        map[string]struct{} // Message-IDs seen
	duplicates int64               // arrivals whose Message-ID was seen before
}

// seen records a Message-ID ("" when the message had none, never a
// duplicate).
func (c *counts) seen(id string) {
	if id == "" {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if _, ok := c.ids[id]; ok {
		c.duplicates++
		return
	}
	c.ids[id] = struct{}{}
}

func (c *counts) dups() int64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.duplicates
}

// sink accepts every message and counts it; GET /status on the status
// address answers "messages signed duplicates".
func sink(args []string) error {
	fs := flag.NewFlagSet("sink", flag.ExitOnError)
	addr := fs.String("addr", "127.0.0.1:2626", "SMTP listen address (loopback)")
	status := fs.String("status", "127.0.0.1:2627", "HTTP status address (loopback)")
	fs.Parse(args)
	if err := loopback(*addr); err != nil {
		return err
	}
	if err := loopback(*status); err != nil {
		return err
	}
	c := counts{ids: map[string]struct{}{}}
	srv := smtp.NewServer(smtp.BackendFunc(func(*smtp.Conn) (smtp.Session, error) { return &session{c: &c}, nil }))
	srv.Addr = *addr
	srv.Domain = "sink.localhost"
	srv.MaxMessageBytes = 64 << 20
	srv.MaxRecipients = 1000
	srv.ReadTimeout, srv.WriteTimeout = time.Minute, time.Minute
	go func() {
		http.ListenAndServe(*status, http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
			// duplicates first: a message counted in messages after it was
			// read is then never taken for a unique one.
			d := c.dups()
			fmt.Fprintf(w, "%d %d %d\n", c.messages.Load(), c.signed.Load(), d)
		}))
	}()
	return srv.ListenAndServe()
}

type session struct{ c *counts }

func (s *session) Mail(string, *smtp.MailOptions) error { return nil }
func (s *session) Rcpt(string, *smtp.RcptOptions) error { return nil }
func (s *session) Reset()                               {}
func (s *session) Logout() error                        { return nil }

func (s *session) Data(r io.Reader) error {
	signed, id, inID := false, "", false
	br := bufio.NewReader(r)
	for { // the header section, then the body is drained
		line, err := br.ReadString('\n')
		lower := strings.ToLower(line)
		switch {
		case strings.HasPrefix(lower, "dkim-signature:"):
			signed = true
		case strings.HasPrefix(lower, "message-id:"):
			id, inID = strings.TrimSpace(line[len("message-id:"):]), true
			continue
		case inID && (strings.HasPrefix(line, " ") || strings.HasPrefix(line, "\t")): // folded
			id += strings.TrimSpace(line)
			continue
		}
		inID = false
		if err != nil || strings.TrimRight(line, "\r\n") == "" {
			break
		}
	}
	if _, err := io.Copy(io.Discard, br); err != nil {
		return err
	}
	s.c.seen(id)
	s.c.messages.Add(1)
	if signed {
		s.c.signed.Add(1)
	}
	return nil
}

// send submits n messages on c connections (AUTH PLAIN when -auth is
// given; connection i to the i-th address of -addr, round robin), then
// waits until the sink counted them all once, and prints both times, the
// end-to-end rate and the duplicates the sink saw meanwhile.
func send(args []string) error {
	fs := flag.NewFlagSet("send", flag.ExitOnError)
	addrList := fs.String("addr", "127.0.0.1:2587", "SMTP servers to submit to (loopback), comma-separated")
	auth := fs.String("auth", "", "USER:PASSWORD for AUTH PLAIN (none when empty)")
	n := fs.Int("n", 2000, "messages")
	conns := fs.Int("c", 8, "connections")
	from := fs.String("from", "orders@shop.example", "envelope and header sender")
	status := fs.String("status", "127.0.0.1:2627", "the sink's status address")
	label := fs.String("label", "", "label printed with the result")
	timeout := fs.Duration("timeout", 10*time.Minute, "give up waiting for the sink after this long")
	noWait := fs.Bool("nowait", false, "print the submission time and return without waiting for the sink (a backlog)")
	fs.Parse(args)
	addrs := strings.Split(*addrList, ",")
	for _, a := range addrs {
		if err := loopback(a); err != nil {
			return err
		}
	}
	var before sinkStatus
	if !*noWait {
		var err error
		if before, err = sinkCount(*status); err != nil {
			return err
		}
	}
	start := time.Now()
	var next atomic.Int64
	var wg sync.WaitGroup
	errs := make(chan error, *conns)
	for i := range *conns {
		wg.Go(func() {
			if err := submit(addrs[i%len(addrs)], *auth, *from, int64(*n), &next); err != nil {
				errs <- err
			}
		})
	}
	wg.Wait()
	close(errs)
	if err := <-errs; err != nil {
		return err
	}
	submitted := time.Since(start)
	if *noWait {
		fmt.Printf("%s\t%d msgs\tsubmitted %.2fs\n", *label, *n, submitted.Seconds())
		return nil
	}
	deadline := time.Now().Add(*timeout)
	for {
		now, err := sinkCount(*status)
		if err != nil {
			return err
		}
		got, dups := now.messages-before.messages, now.duplicates-before.duplicates
		if got-dups >= int64(*n) {
			total := time.Since(start)
			fmt.Printf("%s\t%d msgs\tsubmitted %.2fs\tdelivered %.2fs\t%.0f msgs/s\tsigned %d\tduplicates %d\n", *label, *n,
				submitted.Seconds(), total.Seconds(), float64(*n)/total.Seconds(), now.signed-before.signed, dups)
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("the sink has %d of %d messages (%d duplicates) after %s", got-dups, *n, dups, *timeout)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// sinkStatus is the sink's counters: arrivals, signed arrivals, and
// arrivals that repeated a Message-ID.
type sinkStatus struct{ messages, signed, duplicates int64 }

func sinkCount(status string) (sinkStatus, error) {
	resp, err := http.Get("http://" + status + "/")
	if err != nil {
		return sinkStatus{}, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return sinkStatus{}, err
	}
	f := strings.Fields(string(b))
	if len(f) != 3 {
		return sinkStatus{}, errors.New("sink status: " + string(b))
	}
	var v [3]int64
	for i := range v {
		if v[i], err = strconv.ParseInt(f[i], 10, 64); err != nil {
			return sinkStatus{}, fmt.Errorf("sink status %q: %w", b, err)
		}
	}
	return sinkStatus{v[0], v[1], v[2]}, nil
}

// submit sends messages on one connection until n were taken by all.
func submit(addr, auth, from string, n int64, next *atomic.Int64) error {
	c, err := smtp.Dial(addr)
	if err != nil {
		return err
	}
	defer c.Close()
	if err := c.Hello("load.localhost"); err != nil {
		return err
	}
	if user, pass, ok := strings.Cut(auth, ":"); ok {
		if err := c.Auth(sasl.NewPlainClient("", user, pass)); err != nil {
			return err
		}
	}
	for i := next.Add(1); i <= n; i = next.Add(1) {
		to := fmt.Sprintf("user%d@rcpt.example.net", i)
		if err := c.SendMail(from, []string{to}, bytes.NewReader(message(from, to, i))); err != nil {
			return fmt.Errorf("message %d: %w", i, err)
		}
	}
	return c.Quit()
}

// message is the same order confirmation the in-process benchmarks send:
// text and HTML alternatives of about 520 bytes each.
func message(from, to string, i int64) []byte {
	text := strings.Repeat("Thank you for your order. ", 20)
	var b bytes.Buffer
	fmt.Fprintf(&b, "From: %s\r\nTo: %s\r\nSubject: Your order\r\nDate: %s\r\nMessage-ID: <load-%d-%d@load.localhost>\r\n",
		from, to, time.Now().Format(time.RFC1123Z), time.Now().UnixNano(), i)
	b.WriteString("MIME-Version: 1.0\r\nContent-Type: multipart/alternative; boundary=\"b1\"\r\n\r\n")
	b.WriteString("--b1\r\nContent-Type: text/plain; charset=utf-8\r\n\r\n" + text + "\r\n")
	b.WriteString("--b1\r\nContent-Type: text/html; charset=utf-8\r\n\r\n<p>" + text + "</p>\r\n--b1--\r\n")
	return b.Bytes()
}
