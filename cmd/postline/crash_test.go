package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/csv"
	"encoding/json"
	"fmt"
	"io"
	"mime/multipart"
	"net/http"
	"net/textproto"
	"os"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/postline/postline/internal/dnstest"
	"github.com/postline/postline/internal/smtptest"
	"github.com/postline/postline/internal/store"
	"github.com/postline/postline/internal/testutil"
)

// deliveryRig is a sink standing for every recipient's MX, a DNS server
// pointing at it, and an account with a verified direct-delivery domain.
type deliveryRig struct {
	sink *smtptest.Sink
	dns  *dnstest.Server
	vars map[string]string
	key  string
}

func newDeliveryRig(t *testing.T, vars map[string]string) *deliveryRig {
	t.Helper()
	sink := smtptest.New(t, smtptest.Config{})
	dns := dnstest.New(t)
	dns.AddMX("rcpt.example.net", 10, "mx.rcpt.example.net")
	dns.AddA("mx.rcpt.example.net", "127.0.0.1")
	vars["POSTLINE_DNS_SERVER"] = dns.Addr()
	vars["POSTLINE_MX_PORT"] = fmt.Sprint(sink.Port())
	vars["POSTLINE_DELIVERY_ALLOW_PRIVATE"] = "true" // the MX is the sink on loopback
	vars["POSTLINE_DELIVERY_LEASE"] = "2s"
	vars["POSTLINE_RETRY_SCHEDULE"] = "200ms"
	vars["POSTLINE_RATE_DOMAIN_PER_MINUTE"] = "100000"
	for _, args := range [][]string{{"user", "create", "alice"}, {"domain", "add", "alice", "shop.example.com", "--direct"},
		{"domain", "verify", "shop.example.com", "--force"}} {
		if code, _, errs := cliEnv(t, vars, args...); code != 0 {
			t.Fatalf("%v: %s", args, errs)
		}
	}
	_, out, _ := cliEnv(t, vars, "key", "create", "alice")
	return &deliveryRig{sink: sink, dns: dns, vars: vars, key: strings.TrimSpace(out)}
}

func (r *deliveryRig) env() []string {
	var env []string
	for k, v := range r.vars {
		env = append(env, k+"="+v)
	}
	return env
}

// enqueue sends batches of recipients through srv's API.
func (r *deliveryRig) enqueue(t *testing.T, srv *server, from, n, per int) {
	t.Helper()
	for start := from; start < from+n; start += per {
		var buf bytes.Buffer
		mw := multipart.NewWriter(&buf)
		mw.WriteField("from", "orders@shop.example.com")
		mw.WriteField("subject", "crash test")
		mw.WriteField("text", "hello")
		for i := start; i < start+per && i < from+n; i++ {
			mw.WriteField("to", fmt.Sprintf("user%d@rcpt.example.net", i))
		}
		mw.Close()
		req, _ := http.NewRequest("POST", "http://"+srv.addr+"/api/domains/shop.example.com/message", &buf)
		req.Header.Set("Content-Type", mw.FormDataContentType())
		req.SetBasicAuth("alice", r.key)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != 202 {
			t.Fatalf("enqueue: status %d", resp.StatusCode)
		}
	}
}

// received counts the sink's messages by Message-ID.
func (r *deliveryRig) received(t *testing.T) (unique, total int) {
	seen := map[string]int{}
	for _, m := range r.sink.Messages() {
		h, err := textproto.NewReader(bufio.NewReader(bytes.NewReader(m.Data))).ReadMIMEHeader()
		if err != nil {
			t.Fatalf("unparsable message: %v", err)
		}
		seen[h.Get("Message-Id")]++
		total++
	}
	return len(seen), total
}

func (r *deliveryRig) waitUnique(t *testing.T, n int, within time.Duration) (int, int) {
	t.Helper()
	deadline := time.Now().Add(within)
	for {
		u, tot := r.received(t)
		if u >= n || time.Now().After(deadline) {
			return u, tot
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// An accepted message is never lost: kill -9 the server in the middle of
// delivering, start it again, and every message arrives; only those in
// flight at the crash may arrive twice.
func TestCrashWhileDeliveringLosesNothing(t *testing.T) {
	t.Parallel()
	const n, workers = 300, 4
	rig := newDeliveryRig(t, map[string]string{"POSTLINE_DATA_DIR": t.TempDir(), "POSTLINE_DELIVERY_WORKERS": fmt.Sprint(workers)})
	srv := startServe(t, rig.env())
	rig.enqueue(t, srv, 0, n, 50)
	for {
		if u, _ := rig.received(t); u >= 20 {
			break
		}
		time.Sleep(5 * time.Millisecond)
	}
	srv.cmd.Process.Signal(syscall.SIGKILL)
	<-srv.done
	atCrash, _ := rig.received(t)
	if atCrash >= n {
		t.Fatalf("all %d delivered before the crash; the test needs the crash mid-way", n)
	}
	again := startServe(t, rig.env())
	unique, total := rig.waitUnique(t, n, 60*time.Second)
	again.stop(t)
	t.Logf("delivered %d before SIGKILL; after restart %d unique of %d, %d received, %d duplicates", atCrash, unique, n, total, total-unique)
	if unique != n {
		t.Fatalf("%d of %d messages delivered after the restart: messages were lost", unique, n)
	}
	// In flight: the attempts sending (workers) and the outcomes waiting
	// for their commit (workers more).
	if dup := total - unique; dup > 2*workers {
		t.Fatalf("%d duplicates, more than the %d sent and not yet recorded that a worker allows", dup, 2*workers)
	}
}

// Two processes on one PostgreSQL database share the queue: every message
// is delivered exactly once.
func TestTwoProcessesDeliverEachMessageOnce(t *testing.T) {
	t.Parallel()
	if testutil.PostgresURL() == "" {
		t.Skip("POSTLINE_TEST_DATABASE_URL not set")
	}
	const n = 200
	vars := map[string]string{"POSTLINE_DATA_DIR": t.TempDir(), "POSTLINE_DATABASE_URL": testutil.DatabaseURL(t, store.Postgres),
		"POSTLINE_SECRET_KEY": "MDEyMzQ1Njc4OWFiY2RlZjAxMjM0NTY3ODlhYmNkZWY="}
	rig := newDeliveryRig(t, vars)
	a, b := startServe(t, rig.env()), startServe(t, rig.env())
	rig.enqueue(t, a, 0, n/2, 25)
	rig.enqueue(t, b, n/2, n/2, 25)
	unique, total := rig.waitUnique(t, n, 60*time.Second)
	time.Sleep(500 * time.Millisecond) // a late duplicate would show up now
	unique, total = rig.received(t)
	a.stop(t)
	b.stop(t)
	if unique != n || total != n {
		t.Fatalf("%d unique, %d received; want each of %d exactly once", unique, total, n)
	}
	_ = context.Background
}

// A scheduled message survives kill -9 between its 202 and its time: the
// restarted server sends it once, not before deliver_at.
func TestScheduledSurvivesKill9(t *testing.T) {
	t.Parallel()
	rig := newDeliveryRig(t, map[string]string{"POSTLINE_DATA_DIR": t.TempDir()})
	srv := startServe(t, rig.env())
	at := time.Now().Add(3 * time.Second).UTC()
	var buf bytes.Buffer
	mw := multipart.NewWriter(&buf)
	for k, v := range map[string]string{"from": "orders@shop.example.com", "to": "later@rcpt.example.net", "subject": "scheduled",
		"text": "hello", "deliver_at": at.Format(time.RFC3339Nano)} {
		mw.WriteField(k, v)
	}
	mw.Close()
	req, _ := http.NewRequest("POST", "http://"+srv.addr+"/api/domains/shop.example.com/message", &buf)
	req.Header.Set("Content-Type", mw.FormDataContentType())
	req.SetBasicAuth("alice", rig.key)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 202 {
		t.Fatalf("scheduled send: %d", resp.StatusCode)
	}
	srv.cmd.Process.Signal(syscall.SIGKILL)
	<-srv.done
	again := startServe(t, rig.env())
	defer again.stop(t)
	if u, _ := rig.waitUnique(t, 1, 30*time.Second); u != 1 {
		t.Fatal("the scheduled message was not sent after the restart")
	}
	if got := rig.sink.Messages()[0].ReceivedAt; got.Before(at) {
		t.Errorf("sent at %s, before its deliver_at %s", got, at)
	}
	rig.enqueue(t, again, 0, 1, 1) // a later message: once it is in, the queue has been read again
	if u, total := rig.waitUnique(t, 2, 30*time.Second); u != 2 || total != 2 {
		t.Errorf("%d messages (%d distinct) at the sink, want the scheduled one once and the later one", total, u)
	}
}

// A 10,000-line list-cleaning job survives kill -9 in its middle: the
// restarted server finishes it, and the results have every line exactly
// once, in input order.
func TestValidationJobSurvivesKill9(t *testing.T) {
	t.Parallel()
	if testutil.PostgresURL() != "" {
		t.Skip("the binary runs on SQLite here: once, in the SQLite pass")
	}
	rig := newDeliveryRig(t, map[string]string{"POSTLINE_DATA_DIR": t.TempDir(), "POSTLINE_RATE_VALIDATION_PER_HOUR": "1000000",
		"POSTLINE_VALIDATION_JOB_LEASE": "2s"})
	srv := startServe(t, rig.env())
	n := 10_000
	if v, err := strconv.Atoi(os.Getenv("POSTLINE_JOB_LINES")); err == nil && v >= 1000 { // the benchmark runs 100,000
		n = v
	}
	started := time.Now()
	var list strings.Builder
	for i := 0; i < n; i++ {
		fmt.Fprintf(&list, "user%05d@d%03d.acme-test.com\n", i, i%400)
	}
	call := func(s *server, method, path string, body io.Reader, ct string) (int, []byte) {
		req, _ := http.NewRequest(method, "http://"+s.addr+path, body)
		if ct != "" {
			req.Header.Set("Content-Type", ct)
		}
		req.SetBasicAuth("alice", rig.key)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, b
	}
	var buf bytes.Buffer
	mw := multipart.NewWriter(&buf)
	w, _ := mw.CreateFormFile("file", "list.txt")
	io.WriteString(w, list.String())
	mw.Close()
	code, body := call(srv, "POST", "/api/email/validate/jobs", &buf, mw.FormDataContentType())
	var created struct {
		Data struct{ ID int64 } `json:"data"`
	}
	if code != 202 || json.Unmarshal(body, &created) != nil {
		t.Fatalf("job: %d %s", code, body)
	}
	path := fmt.Sprintf("/api/email/validate/jobs/%d", created.Data.ID)
	progress := func(s *server) (int, string) {
		_, b := call(s, "GET", path, nil, "")
		var j struct {
			Data struct {
				Done   int
				Status string
			} `json:"data"`
		}
		json.Unmarshal(b, &j)
		return j.Data.Done, j.Data.Status
	}
	deadline := time.Now().Add(60 * time.Second)
	for {
		done, status := progress(srv)
		if done > 0 && done < n-500 {
			t.Logf("killed with %d of %d lines done", done, n)
			break
		}
		if status == "done" || time.Now().After(deadline) {
			t.Fatalf("the job was not caught in its middle: %d done, %s", done, status)
		}
		time.Sleep(5 * time.Millisecond)
	}
	srv.cmd.Process.Signal(syscall.SIGKILL)
	<-srv.done
	again := startServe(t, rig.env())
	defer again.stop(t)
	deadline = time.Now().Add(60*time.Second + time.Duration(n)*10*time.Millisecond)
	for {
		if _, status := progress(again); status == "done" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the job did not finish after the restart")
		}
		time.Sleep(100 * time.Millisecond)
	}
	t.Logf("%d lines done %s after the upload, across kill -9 and a restart", n, time.Since(started).Round(time.Millisecond))
	code, body = call(again, "GET", path+"/results", nil, "")
	rows, err := csv.NewReader(bytes.NewReader(body)).ReadAll()
	if code != 200 || err != nil || len(rows) != n+1 {
		t.Fatalf("results: %d, %d rows, %v", code, len(rows), err)
	}
	for i, row := range rows[1:] {
		if want := fmt.Sprintf("user%05d@d%03d.acme-test.com", i, i%400); row[0] != want || row[1] == "" {
			t.Fatalf("row %d: %v, want %s with a result", i+1, row, want)
		}
	}
}
