// Command httpload measures HTTP request rates out of process, for
// BENCHMARKS.md: a load generator in the manner of wrk (keep-alive
// connections, each sending its next request when the previous answer is
// read), a canned net/http server answering fixed JSON (the ceiling of the
// Go HTTP stack on the machine), and a DNS server for the benchmark's
// addresses. Everything listens on and talks to loopback only.
//
//	httpload canned -addr 127.0.0.1:9901 -body '{"success":true,...}'
//	httpload dns -addr 127.0.0.1:9953 -mx acme-mail.com
//	httpload load -c 32 -d 10s -method POST -url http://127.0.0.1:8025/api/email/validate \
//	    -header 'Authorization: Basic ...' -body '{"email":"jane@acme-mail.com"}'
package main

import (
	"bytes"
	"context"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/signal"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/postline/postline/internal/dnstest"
)

func main() {
	if len(os.Args) < 2 {
		fmt.Fprintln(os.Stderr, "usage: httpload canned|dns|load [flags]")
		os.Exit(2)
	}
	var err error
	switch os.Args[1] {
	case "canned":
		err = canned(os.Args[2:])
	case "dns":
		err = dnsServer(os.Args[2:])
	case "load":
		err = load(os.Args[2:])
	default:
		err = fmt.Errorf("unknown mode %q: want canned, dns or load", os.Args[1])
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "httpload:", err)
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

// canned answers every request with the same JSON, as cheaply as net/http
// allows: the ceiling a Go handler reaches on this machine.
func canned(args []string) error {
	fs := flag.NewFlagSet("canned", flag.ExitOnError)
	addr := fs.String("addr", "127.0.0.1:9901", "listen address (loopback)")
	body := fs.String("body", `{"success":true}`, "the JSON every request gets")
	fs.Parse(args)
	if err := loopback(*addr); err != nil {
		return err
	}
	b := []byte(*body)
	return http.ListenAndServe(*addr, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		w.Header().Set("Content-Type", "application/json")
		w.Write(b)
	}))
}

// dnsServer answers MX and A records for the benchmark's domains until
// interrupted.
func dnsServer(args []string) error {
	fs := flag.NewFlagSet("dns", flag.ExitOnError)
	addr := fs.String("addr", "127.0.0.1:9953", "listen address (loopback)")
	mx := fs.String("mx", "acme-mail.com", "comma-separated domains given an MX (mx.DOMAIN → 127.0.0.1)")
	fs.Parse(args)
	if err := loopback(*addr); err != nil {
		return err
	}
	s, err := dnstest.Start(*addr)
	if err != nil {
		return err
	}
	defer s.Close()
	for _, d := range strings.Split(*mx, ",") {
		s.AddMX(d, 10, "mx."+d)
		s.AddA("mx."+d, "127.0.0.1")
	}
	fmt.Println("dns listening on", s.Addr())
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	<-ctx.Done()
	return nil
}

type headers []string

func (h *headers) String() string     { return strings.Join(*h, "; ") }
func (h *headers) Set(v string) error { *h = append(*h, v); return nil }

// load keeps c connections busy for d and prints the rate and latencies.
func load(args []string) error {
	fs := flag.NewFlagSet("load", flag.ExitOnError)
	conns := fs.Int("c", 32, "connections")
	dur := fs.Duration("d", 10*time.Second, "duration")
	method := fs.String("method", "GET", "method")
	rawURL := fs.String("url", "", "URL (loopback)")
	body := fs.String("body", "", "request body")
	label := fs.String("label", "", "name printed with the result")
	var hs headers
	fs.Var(&hs, "header", "a header `Name: value` (repeatable)")
	fs.Parse(args)
	u, err := url.Parse(*rawURL)
	if err != nil {
		return err
	}
	if err := loopback(u.Host); err != nil {
		return err
	}
	tr := &http.Transport{MaxIdleConnsPerHost: *conns, MaxConnsPerHost: *conns, DisableCompression: true}
	client := &http.Client{Transport: tr}
	var (
		mu        sync.Mutex
		latencies []time.Duration
		failures  = map[int]int{}
	)
	deadline := time.Now().Add(*dur)
	var wg sync.WaitGroup
	start := time.Now()
	for range *conns {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var mine []time.Duration
			bad := map[int]int{}
			for time.Now().Before(deadline) {
				req, _ := http.NewRequest(*method, *rawURL, bytes.NewReader([]byte(*body)))
				for _, h := range hs {
					k, v, _ := strings.Cut(h, ":")
					req.Header.Set(strings.TrimSpace(k), strings.TrimSpace(v))
				}
				t0 := time.Now()
				resp, err := client.Do(req)
				if err != nil {
					bad[-1]++
					continue
				}
				io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
				if resp.StatusCode >= 300 {
					bad[resp.StatusCode]++
				}
				mine = append(mine, time.Since(t0))
			}
			mu.Lock()
			latencies = append(latencies, mine...)
			for k, v := range bad {
				failures[k] += v
			}
			mu.Unlock()
		}()
	}
	wg.Wait()
	elapsed := time.Since(start)
	slices.Sort(latencies)
	pct := func(p float64) time.Duration {
		if len(latencies) == 0 {
			return 0
		}
		return latencies[min(len(latencies)-1, int(float64(len(latencies))*p))]
	}
	fmt.Printf("%s\t%.0f req/s\tp50 %v\tp99 %v\t%d requests", *label, float64(len(latencies))/elapsed.Seconds(),
		pct(0.50).Round(10*time.Microsecond), pct(0.99).Round(10*time.Microsecond), len(latencies))
	if len(failures) > 0 {
		fmt.Printf("\tnon-2xx/errors %v", failures)
	}
	fmt.Println()
	return nil
}
