package simnet_test

import (
	"bufio"
	"errors"
	"fmt"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/emersion/go-smtp"
	"github.com/postline/postline/internal/simnet"
)

const body = "Subject: hi\r\n\r\nHello.\r\n"

// dialFrom connects to p's SMTP server from source address src
// (127.0.0.x) and returns the raw connection and the greeting line.
func dialFrom(t *testing.T, src string, p *simnet.Provider) (net.Conn, string) {
	t.Helper()
	d := net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(src)}, Timeout: 5 * time.Second}
	conn, err := d.Dial("tcp", p.SMTPAddr())
	if err != nil {
		t.Fatalf("dial %s from %s: %v", p.SMTPAddr(), src, err)
	}
	t.Cleanup(func() { conn.Close() })
	conn.SetReadDeadline(time.Now().Add(5 * time.Second))
	line, err := bufio.NewReader(conn).ReadString('\n')
	if err != nil {
		t.Fatalf("greeting from %s to %s: %v", src, p.Name(), err)
	}
	conn.SetReadDeadline(time.Time{})
	return conn, strings.TrimSpace(line)
}

// client opens an SMTP session with p from src, after a 220 greeting.
func client(t *testing.T, src string, p *simnet.Provider) *smtp.Client {
	t.Helper()
	d := net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(src)}, Timeout: 5 * time.Second}
	conn, err := d.Dial("tcp", p.SMTPAddr())
	if err != nil {
		t.Fatalf("dial %s from %s: %v", p.SMTPAddr(), src, err)
	}
	c := smtp.NewClient(conn)
	t.Cleanup(func() { c.Close() })
	if err := c.Hello("client.test"); err != nil {
		t.Fatalf("EHLO from %s to %s: %v", src, p.Name(), err)
	}
	return c
}

// send runs one transaction on c and returns the first error.
func send(c *smtp.Client, from, to string) error {
	if err := c.Mail(from, nil); err != nil {
		return err
	}
	if err := c.Rcpt(to, nil); err != nil {
		return err
	}
	w, err := c.Data()
	if err != nil {
		return err
	}
	if _, err := w.Write([]byte(body)); err != nil {
		return err
	}
	return w.Close()
}

// reply is err's SMTP reply as "421 4.7.28", or "" if err is not one.
func reply(err error) string {
	var e *smtp.SMTPError
	if !errors.As(err, &e) {
		return ""
	}
	return fmt.Sprintf("%d %d.%d.%d", e.Code, e.EnhancedCode[0], e.EnhancedCode[1], e.EnhancedCode[2])
}

// one starts a Net with a single provider configured as pc.
func one(t *testing.T, pc simnet.ProviderConfig) (*simnet.Net, *simnet.Provider) {
	t.Helper()
	if pc.Name == "" {
		pc.Name = "prov"
	}
	if pc.Domains == 0 {
		pc.Domains = 3
	}
	n := simnet.New(t, simnet.Config{Providers: []simnet.ProviderConfig{pc}})
	return n, n.Providers()[0]
}
