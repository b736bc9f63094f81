package app_test

import (
	"bytes"
	"fmt"
	"io"
	"mime/multipart"
	"net"
	"net/smtp"
	"os"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/postline/postline/internal/config"
	"github.com/postline/postline/internal/store"
)

// spoolFiles is the number and total size of the files in dir.
func spoolFiles(t *testing.T, dir string) (n int, size int64) {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil && !os.IsNotExist(err) {
		t.Fatal(err)
	}
	for _, e := range entries {
		if info, err := e.Info(); err == nil {
			n, size = n+1, size+info.Size()
		}
	}
	return n, size
}

func heapInuse() uint64 {
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return m.HeapInuse
}

// bodyLines is size bytes of message lines.
func bodyLines(size int) []byte {
	line := []byte(strings.Repeat("0123456789abcdef", 4) + "\r\n")
	return bytes.Repeat(line, size/len(line)+1)[:size]
}

// Clients that send large messages (submission, inbound) and uploads
// (the send endpoint) and never finish them cost disk, not memory: the
// process's heap grows by far less than what they sent, and their spool
// files are gone once they disconnect.
//
// Not parallel: it measures the heap of the test process, which parallel
// tests would move.
func TestUnfinishedBodiesWaitOnDisk(t *testing.T) {
	const perSession, sessions = 6 << 20, 3 // per door: submission, inbound, HTTP
	e := startSubmission(t, store.SQLite, func(c *config.Config) {
		c.SMTPListen = "127.0.0.1:0"
		c.SubmissionMaxBytes, c.SMTPMaxBytes = 16<<20, 16<<20
	})
	spoolDir := e.Config.SpoolDir()
	bounceAddr := bounceAddress(t, e) // the inbound port takes a message for it
	body := bodyLines(perSession)
	before := heapInuse()

	var wg sync.WaitGroup
	var closers []io.Closer
	fail := make(chan error, 3*sessions)
	start := func(open func() (io.Writer, io.Closer, error)) {
		w, c, err := open()
		if err != nil {
			t.Fatal(err)
		}
		closers = append(closers, c)
		wg.Add(1)
		go func() {
			defer wg.Done()
			if _, err := w.Write(body); err != nil {
				fail <- err
			}
		}()
	}
	for range sessions {
		start(func() (io.Writer, io.Closer, error) { // submission, after AUTH
			c, err := dialSubmission(t, e, false, smtp.PlainAuth("", e.user.Login, e.user.Key, "127.0.0.1"))
			if err != nil {
				return nil, nil, err
			}
			return openData(c, "orders@shop.example.com", "big@rcpt.example.net")
		})
		start(func() (io.Writer, io.Closer, error) { // inbound, to a bounce address
			c, err := smtp.Dial(e.App.Inbound.Addr())
			if err != nil {
				return nil, nil, err
			}
			return openData(c, "", bounceAddr)
		})
		start(func() (io.Writer, io.Closer, error) { return openUpload(e, perSession) })
	}
	wg.Wait()
	close(fail)
	for err := range fail {
		t.Fatalf("sending: %v", err)
	}
	// Until the server has it all on disk, and after: the heap stays far
	// below what the clients sent.
	sent := uint64(3 * sessions * perSession)
	heapOK := func() {
		if grew := int64(heapInuse()) - int64(before); grew > int64(sent/3) {
			t.Fatalf("heap in use grew by %d MiB while clients held %d MiB of unfinished bodies, want under %d MiB",
				grew>>20, sent>>20, sent/3>>20)
		}
	}
	deadline := time.Now().Add(20 * time.Second)
	for {
		heapOK()
		n, size := spoolFiles(t, spoolDir)
		if n == 3*sessions && size >= int64(3*sessions*(perSession-(1<<20))) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the spool directory holds %d files of %d bytes, want %d files of about %d MiB each",
				n, size, 3*sessions, perSession>>20)
		}
		time.Sleep(50 * time.Millisecond)
	}
	heapOK()
	for _, c := range closers {
		c.Close()
	}
	deadline = time.Now().Add(10 * time.Second)
	for {
		n, _ := spoolFiles(t, spoolDir)
		if n == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d spool files left 10 s after their clients disconnected", n)
		}
		time.Sleep(20 * time.Millisecond)
	}

	// A large message that does finish is read back and accepted.
	c, err := dialSubmission(t, e, false, smtp.PlainAuth("", e.user.Login, e.user.Key, "127.0.0.1"))
	if err != nil {
		t.Fatal(err)
	}
	msg := "From: orders@shop.example.com\r\nTo: big@rcpt.example.net\r\nSubject: large\r\n\r\n" + string(bodyLines(3<<20))
	if err := submit(c, "orders@shop.example.com", []string{"big@rcpt.example.net"}, msg); err != nil {
		t.Fatalf("a finished 3 MiB message: %v, want 250", err)
	}
	if n, _ := spoolFiles(t, spoolDir); n != 0 {
		t.Fatalf("%d spool files left after a message was accepted", n)
	}
}

// openData starts a transaction and DATA; the writer never ends it.
func openData(c *smtp.Client, from, to string) (io.Writer, io.Closer, error) {
	if err := c.Mail(from); err != nil {
		return nil, nil, err
	}
	if err := c.Rcpt(to); err != nil {
		return nil, nil, err
	}
	w, err := c.Data()
	if err != nil {
		return nil, nil, err
	}
	if _, err := io.WriteString(w, "Subject: never finished\r\n\r\n"); err != nil {
		return nil, nil, err
	}
	return w, c, nil
}

// openUpload starts a send request whose attachment part the writer
// carries; the body never ends (its Content-Length promises more).
func openUpload(e *sendEnv, size int) (io.Writer, io.Closer, error) {
	var head bytes.Buffer
	mw := multipart.NewWriter(&head)
	mw.WriteField("from", "orders@shop.example.com")
	mw.WriteField("to", "big@rcpt.example.net")
	mw.CreateFormFile("attachments", "big.txt")
	c, err := net.Dial("tcp", strings.TrimPrefix(e.URL, "http://"))
	if err != nil {
		return nil, nil, err
	}
	_, err = fmt.Fprintf(c, "POST /api/domains/shop.example.com/message HTTP/1.1\r\nHost: %s\r\nAuthorization: %s\r\n"+
		"Content-Type: %s\r\nContent-Length: %d\r\n\r\n%s", strings.TrimPrefix(e.URL, "http://"), e.user.Auth(),
		mw.FormDataContentType(), head.Len()+size+1<<20, head.Bytes())
	return c, c, err
}
