package smtptest_test

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/emersion/go-sasl"
	"github.com/emersion/go-smtp"
	"github.com/postline/postline/internal/smtptest"
)

const body = "Subject: hi\r\n\r\nHello.\r\n"

// send runs one transaction on c and returns the first error, naming the
// command that failed.
func send(c *smtp.Client, from string, to []string, data string) error {
	if err := c.Mail(from, nil); err != nil {
		return err
	}
	for _, rcpt := range to {
		if err := c.Rcpt(rcpt, nil); err != nil {
			return err
		}
	}
	w, err := c.Data()
	if err != nil {
		return err
	}
	if _, err := w.Write([]byte(data)); err != nil {
		return err
	}
	return w.Close()
}

// dial connects to the sink, failing the test on error, and closes the
// client at the end of the test.
func dial(t *testing.T, s *smtptest.Sink) *smtp.Client {
	t.Helper()
	c, err := smtp.Dial(s.Addr())
	if err != nil {
		t.Fatalf("Dial: %v", err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// dialStartTLS connects to the sink and upgrades with STARTTLS.
func dialStartTLS(t *testing.T, s *smtptest.Sink, cfg *tls.Config) *smtp.Client {
	t.Helper()
	c, err := smtp.DialStartTLS(s.Addr(), cfg)
	if err != nil {
		t.Fatalf("DialStartTLS: %v", err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// code returns the SMTP code of err, or 0 if it is not an *smtp.SMTPError.
func code(err error) int {
	var e *smtp.SMTPError
	if errors.As(err, &e) {
		return e.Code
	}
	return 0
}

func TestPlainDelivery(t *testing.T) {
	t.Parallel()
	s := smtptest.New(t, smtptest.Config{})
	c := dial(t, s)
	if err := send(c, "from@example.com", []string{"a@example.net", "b@example.net"}, body); err != nil {
		t.Fatalf("send: %v", err)
	}
	c.Quit()

	msgs := s.Messages()
	if len(msgs) != 1 {
		t.Fatalf("Messages() has %d messages, want 1", len(msgs))
	}
	m := msgs[0]
	if m.From != "from@example.com" || strings.Join(m.To, ",") != "a@example.net,b@example.net" ||
		string(m.Data) != body || m.TLS || m.AuthUser != "" || m.Helo != "localhost" || m.ReceivedAt.IsZero() {
		t.Errorf("message = %+v", m)
	}
	if s.Sessions() != 1 {
		t.Errorf("Sessions() = %d, want 1", s.Sessions())
	}
}

func TestAuth(t *testing.T) {
	t.Parallel()
	s := smtptest.New(t, smtptest.Config{Auth: &smtptest.Credentials{User: "u", Password: "secret"}})
	tests := []struct {
		name     string
		auth     sasl.Client // nil: do not authenticate
		wantAuth int         // SMTP code of the AUTH failure, 0 for success
		wantMail int         // SMTP code of the MAIL failure, 0 for success
	}{
		{name: "none", auth: nil, wantMail: 502},
		{name: "plain wrong password", auth: sasl.NewPlainClient("", "u", "nope"), wantAuth: 535},
		{name: "plain wrong user", auth: sasl.NewPlainClient("", "x", "secret"), wantAuth: 535},
		{name: "plain", auth: sasl.NewPlainClient("", "u", "secret")},
		{name: "login", auth: sasl.NewLoginClient("u", "secret")},
		{name: "login wrong password", auth: sasl.NewLoginClient("u", "nope"), wantAuth: 535},
	}
	for _, tt := range tests {
		c := dial(t, s)
		if tt.auth != nil {
			if err := c.Auth(tt.auth); code(err) != tt.wantAuth {
				t.Errorf("%s: Auth = %v, want code %d", tt.name, err, tt.wantAuth)
			}
			if tt.wantAuth != 0 {
				continue
			}
		}
		err := send(c, "from@example.com", []string{"to@example.net"}, body)
		if code(err) != tt.wantMail || (tt.wantMail == 0 && err != nil) {
			t.Errorf("%s: send = %v, want code %d", tt.name, err, tt.wantMail)
		}
	}
	msgs := s.Messages()
	if len(msgs) != 2 || msgs[0].AuthUser != "u" || msgs[1].AuthUser != "u" {
		t.Errorf("messages = %+v, want 2 sent as u", msgs)
	}
}

func TestStartTLS(t *testing.T) {
	t.Parallel()
	tlsCfg := smtptest.SelfSignedTLS(t)
	s := smtptest.New(t, smtptest.Config{TLS: tlsCfg, Auth: &smtptest.Credentials{User: "u", Password: "p"}})

	if ok, _ := dial(t, s).Extension("STARTTLS"); !ok {
		t.Fatal("STARTTLS not offered")
	}
	c := dialStartTLS(t, s, tlsCfg)
	if err := c.Auth(sasl.NewPlainClient("", "u", "p")); err != nil {
		t.Fatalf("Auth after STARTTLS: %v", err)
	}
	if err := send(c, "from@example.com", []string{"to@example.net"}, body); err != nil {
		t.Fatalf("send: %v", err)
	}
	if msgs := s.Messages(); len(msgs) != 1 || !msgs[0].TLS || msgs[0].AuthUser != "u" {
		t.Errorf("messages = %+v, want one over TLS as u", msgs)
	}

	plain := smtptest.New(t, smtptest.Config{})
	if ok, _ := dial(t, plain).Extension("STARTTLS"); ok {
		t.Error("STARTTLS offered without Config.TLS")
	}
}

func TestMaxMessageBytes(t *testing.T) {
	t.Parallel()
	s := smtptest.New(t, smtptest.Config{MaxMessageBytes: 100})
	err := send(dial(t, s), "from@example.com", []string{"to@example.net"}, strings.Repeat("x", 1000)+"\r\n")
	if code(err) != 552 {
		t.Errorf("sending 1000 bytes with MaxMessageBytes 100 = %v, want 552", err)
	}
	if n := len(s.Messages()); n != 0 {
		t.Errorf("%d messages recorded, want 0", n)
	}
}

func TestWaitForMessages(t *testing.T) {
	t.Parallel()
	s := smtptest.New(t, smtptest.Config{})
	errc := make(chan error, 1)
	go func() {
		c, err := smtp.Dial(s.Addr())
		if err != nil {
			errc <- err
			return
		}
		defer c.Close()
		for range 2 {
			if err := send(c, "from@example.com", []string{"to@example.net"}, body); err != nil {
				errc <- err
				return
			}
		}
		errc <- c.Quit()
	}()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
	defer cancel()
	msgs, err := s.WaitForMessages(ctx, 2)
	if err != nil || len(msgs) != 2 {
		t.Fatalf("WaitForMessages(2) = %d messages, %v", len(msgs), err)
	}
	if err := <-errc; err != nil {
		t.Errorf("client: %v", err)
	}

	short, cancel2 := context.WithTimeout(context.Background(), 20*time.Millisecond)
	defer cancel2()
	msgs, err = s.WaitForMessages(short, 3)
	if !errors.Is(err, context.DeadlineExceeded) || len(msgs) != 2 {
		t.Errorf("WaitForMessages(3) with 2 sent = %d messages, %v; want 2 and DeadlineExceeded", len(msgs), err)
	}
}

// The certificate verifies for the loopback names and the extra hosts.
func TestSelfSignedTLSVerifies(t *testing.T) {
	t.Parallel()
	cfg := smtptest.SelfSignedTLS(t, "mx.test")
	for _, name := range []string{"127.0.0.1", "localhost", "mx.test"} {
		opts := x509.VerifyOptions{Roots: cfg.RootCAs, DNSName: name}
		if _, err := cfg.Certificates[0].Leaf.Verify(opts); err != nil {
			t.Errorf("certificate for %s: %v", name, err)
		}
	}
}

// Open counts a connection until its client says QUIT or closes it, and
// MaxOpen keeps the peak.
func TestOpenConnections(t *testing.T) {
	t.Parallel()
	s := smtptest.New(t, smtptest.Config{})
	a, b, c := dial(t, s), dial(t, s), dial(t, s)
	for _, cl := range []*smtp.Client{a, b, c} {
		if err := cl.Hello("client.test"); err != nil { // the server has accepted it once it answers
			t.Fatal(err)
		}
	}
	if got := s.Open(); got != 3 {
		t.Fatalf("Open = %d with three clients connected, want 3", got)
	}
	if err := a.Quit(); err != nil {
		t.Fatal(err)
	}
	b.Close()
	waitFor(t, func() bool { return s.Open() == 1 }, "Open to drop to 1 after a QUIT and a close")
	d := dial(t, s)
	if err := d.Hello("client.test"); err != nil {
		t.Fatal(err)
	}
	if got, peak := s.Open(), s.MaxOpen(); got != 2 || peak != 3 {
		t.Errorf("Open, MaxOpen = %d, %d; want 2, 3", got, peak)
	}
}

func waitFor(t *testing.T, cond func() bool, what string) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}
