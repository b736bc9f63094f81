package delivery_test

import (
	"bufio"
	"io"
	"net"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/postline/postline/internal/delivery"
	"github.com/postline/postline/internal/smtptest"
)

// endlessMX is a hostile MX on loopback: it greets, then answers the
// command named by at with "CODE-" continuation lines that never end
// (until the client hangs up). It returns the port.
func endlessMX(t *testing.T, at string, code int) int {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	line := strconv.Itoa(code) + "-" + strings.Repeat("x", 500) + "\r\n"
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				io.WriteString(c, "220 hostile.test ESMTP\r\n")
				r := bufio.NewReader(c)
				for {
					cmd, err := r.ReadString('\n')
					if err != nil {
						return
					}
					verb := strings.ToUpper(strings.Fields(cmd + " x")[0])
					if verb != at {
						switch verb {
						case "EHLO":
							io.WriteString(c, "250-hostile.test\r\n250 STARTTLS\r\n")
						case "DATA":
							io.WriteString(c, "354 go on\r\n")
							for l := ""; l != ".\r\n"; {
								if l, err = r.ReadString('\n'); err != nil {
									return
								}
							}
							io.WriteString(c, "250 queued\r\n")
						default:
							io.WriteString(c, "250 ok\r\n")
						}
						continue
					}
					for {
						if _, err := io.WriteString(c, line); err != nil {
							return
						}
					}
				}
			}()
		}
	}()
	return ln.Addr().(*net.TCPAddr).Port
}

// TestEndlessReply: a server whose reply never ends (to EHLO, to RCPT)
// fails the attempt after a bounded reply, at once, instead of holding the
// worker and growing its memory until the command timeout; to STARTTLS,
// the failed STARTTLS is retried in plain text at once (the default TLS
// mode), so the message goes out.
func TestEndlessReply(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		at   string
		code int
	}{{"EHLO", 250}, {"STARTTLS", 220}, {"RCPT", 421}} {
		t.Run(tt.at, func(t *testing.T) {
			t.Parallel()
			port := endlessMX(t, tt.at, tt.code)
			f := setup(t, smtptest.Config{}, func(c *delivery.Config) {
				c.MXPort, c.CommandTimeout = port, time.Minute
			})
			f.dns.AddMX("example.test", 10, "mx.example.test")
			f.dns.AddA("mx.example.test", "127.0.0.1")
			start := time.Now()
			res, err := f.send(t, direct, "rcpt@example.test")
			if tt.at == "STARTTLS" {
				if err != nil || res.TLS.Version != "" {
					t.Fatalf("Send = %+v, %v; want delivered in plain text after the failed STARTTLS", res, err)
				}
				if took := time.Since(start); took > 10*time.Second {
					t.Errorf("attempt took %v; want the STARTTLS reply given up soon after the reply bound", took)
				}
				return
			}
			if err == nil {
				t.Fatal("delivery succeeded against a reply without end")
			}
			if took := time.Since(start); took > 10*time.Second {
				t.Errorf("attempt took %v; want it to fail soon after the reply bound, not at the command timeout", took)
			}
			e := asError(t, err)
			if !e.Temporary || !strings.Contains(e.Error(), "longer than 32768 bytes") {
				t.Errorf("error %q (temporary %v), want a temporary failure naming the reply bound", e, e.Temporary)
			}
		})
	}
}
