package delivery_test

import (
	"context"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"syscall"
	"testing"
	"time"

	"github.com/emersion/go-smtp"
	"github.com/postline/postline/internal/delivery"
	"github.com/postline/postline/internal/dnsclient"
)

func TestClassify(t *testing.T) {
	t.Parallel()
	own := &delivery.Error{Code: 550, Enhanced: "5.1.1", Stage: delivery.StageRcpt}
	tests := []struct {
		name     string
		err      error
		wantCode int
		wantEnh  string
		wantTemp bool
	}{
		{"4xx reply", &smtp.SMTPError{Code: 451, EnhancedCode: smtp.EnhancedCode{4, 3, 0}, Message: "later"}, 451, "4.3.0", true},
		{"5xx reply", &smtp.SMTPError{Code: 554, EnhancedCode: smtp.EnhancedCode{5, 7, 1}, Message: "no"}, 554, "5.7.1", false},
		{"reply without enhanced code", &smtp.SMTPError{Code: 550, Message: "no"}, 550, "", false},
		{"unexpected 3xx reply", &smtp.SMTPError{Code: 354, Message: "?"}, 354, "", true},
		{"wrapped reply", fmt.Errorf("x: %w", &smtp.SMTPError{Code: 452, EnhancedCode: smtp.EnhancedCode{4, 2, 2}}), 452, "4.2.2", true},
		{"connection refused", &net.OpError{Op: "dial", Net: "tcp", Err: syscall.ECONNREFUSED}, 0, "4.4.1", true},
		{"connection reset", &net.OpError{Op: "read", Net: "tcp", Err: syscall.ECONNRESET}, 0, "4.4.2", true},
		{"eof", io.EOF, 0, "4.4.2", true},
		{"i/o timeout", os.ErrDeadlineExceeded, 0, "4.4.2", true},
		{"certificate", x509.UnknownAuthorityError{}, 0, "4.7.5", true},
		{"canceled", context.Canceled, 0, "4.4.7", true},
		{"deadline", fmt.Errorf("send: %w", context.DeadlineExceeded), 0, "4.4.7", true},
		{"dns servfail", &dnsclient.Error{Kind: dnsclient.Temporary, Rcode: 2}, 0, "4.4.3", true},
		{"dns nxdomain", &dnsclient.Error{Kind: dnsclient.NotFound, Rcode: 3}, 0, "5.4.4", false},
		{"closed", delivery.ErrClosed, 0, "4.3.2", true},
		{"unknown", errors.New("something odd"), 0, "4.0.0", true},
		{"own error passes through", fmt.Errorf("wrapped: %w", own), 550, "5.1.1", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			e := delivery.Classify(tt.err)
			if e == nil {
				t.Fatalf("Classify(%v) = nil", tt.err)
			}
			if e.Code != tt.wantCode || e.Enhanced != tt.wantEnh || e.Temporary != tt.wantTemp {
				t.Errorf("Classify(%v) = %+v, want Code %d, Enhanced %q, Temporary %v",
					tt.err, *e, tt.wantCode, tt.wantEnh, tt.wantTemp)
			}
			if e != own && !errors.Is(e, tt.err) {
				t.Errorf("Classify(%v) does not wrap the error", tt.err)
			}
		})
	}
	if e := delivery.Classify(nil); e != nil {
		t.Errorf("Classify(nil) = %v, want nil", e)
	}
}

func TestErrorString(t *testing.T) {
	t.Parallel()
	e := &delivery.Error{Code: 550, Enhanced: "5.1.1", Message: "no such user", Host: "mx.example.com", Stage: delivery.StageRcpt}
	if got, want := e.Error(), "delivery: rcpt mx.example.com: 550 5.1.1 no such user (permanent)"; got != want {
		t.Errorf("Error() = %q, want %q", got, want)
	}
}

func TestRecipientRejected(t *testing.T) {
	t.Parallel()
	tests := []struct {
		code  int
		enh   string
		stage string
		temp  bool
		want  bool
	}{
		{550, "5.1.1", delivery.StageRcpt, false, true},  // bad mailbox (RFC 3463)
		{550, "5.1.2", delivery.StageRcpt, false, true},  // bad destination system
		{0, "5.1.10", delivery.StageDNS, false, true},    // null MX (RFC 7505)
		{550, "5.1.6", delivery.StageRcpt, false, true},  // mailbox moved
		{550, "5.2.1", delivery.StageRcpt, false, true},  // mailbox disabled
		{550, "5.1.1", delivery.StageData, false, true},  // checked after DATA
		{550, "", delivery.StageRcpt, false, true},       // no enhanced code
		{553, "", delivery.StageRcpt, false, true},       // mailbox name not allowed
		{554, "", delivery.StageRcpt, false, false},      // transaction failed: unknown cause
		{550, "", delivery.StageData, false, false},      // 550 after DATA: content
		{552, "5.2.2", delivery.StageRcpt, false, false}, // mailbox full: persistent transient
		{452, "4.2.2", delivery.StageRcpt, true, false},  // mailbox full, temporary
		{450, "4.1.1", delivery.StageRcpt, true, false},  // temporary
		{550, "5.7.1", delivery.StageRcpt, false, false}, // policy
		{553, "5.1.7", delivery.StageRcpt, false, false}, // bad sender address
		{553, "5.1.8", delivery.StageMail, false, false}, // bad sender domain
		{550, "5.1.1", delivery.StageMail, false, false}, // at MAIL: the sender
		{535, "5.7.8", delivery.StageAuth, false, false}, // credentials
		{0, "5.4.4", delivery.StageDNS, false, false},    // unroutable
		{554, "5.1.1", delivery.StageConnect, false, false},
	}
	for _, tt := range tests {
		e := &delivery.Error{Code: tt.code, Enhanced: tt.enh, Stage: tt.stage, Temporary: tt.temp}
		if got := e.RecipientRejected(); got != tt.want {
			t.Errorf("%d %s at %s (temporary %v): RecipientRejected() = %v, want %v",
				tt.code, tt.enh, tt.stage, tt.temp, got, tt.want)
		}
	}
}

func TestRetryAfter(t *testing.T) {
	t.Parallel()
	tests := []struct {
		msg  string
		want time.Duration
	}{
		{"Greylisted, try again in 60 seconds", time.Minute},
		{"Please retry after 5 minutes.", 5 * time.Minute},
		{"Too many connections, wait 30s", 30 * time.Second},
		{"Greylisted for 300 seconds (see http://postgrey.example/)", 5 * time.Minute},
		{"Rate limited; try again in 1.5 min", 90 * time.Second},
		{"retry in 2 hours", 2 * time.Hour},
		{"Try again in 3 days", 0}, // unit not understood
		{"try again in 100 hours", 24 * time.Hour},
		{"4.7.0 Try again later, closing connection.", 0},
		{"Mailbox busy for 10 minutes of the last hour", 0}, // no trigger word
		{"Server busy. Please try again later from [192.0.2.1]", 0},
		{"User over quota (3 messages in 5 minutes)", 0},
	}
	for _, tt := range tests {
		e := &delivery.Error{Code: 450, Temporary: true, Message: tt.msg}
		if got := e.RetryAfter(); got != tt.want {
			t.Errorf("RetryAfter(%q) = %v, want %v", tt.msg, got, tt.want)
		}
	}
	perm := &delivery.Error{Code: 550, Message: "try again in 60 seconds"}
	if got := perm.RetryAfter(); got != 0 {
		t.Errorf("RetryAfter of a permanent error = %v, want 0", got)
	}
}

func TestNewConfig(t *testing.T) {
	t.Parallel()
	res, err := dnsclient.New(dnsclient.Config{Server: "127.0.0.1:1"})
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name string
		cfg  delivery.Config
		ok   bool
	}{
		{"defaults", delivery.Config{Resolver: res}, true},
		{"no resolver", delivery.Config{}, false},
		{"bad port", delivery.Config{Resolver: res, MXPort: 70000}, false},
		{"negative timeout", delivery.Config{Resolver: res, CommandTimeout: -1}, false},
		{"negative conns", delivery.Config{Resolver: res, MaxConnsPerDest: -1}, false},
		{"negative relay conns", delivery.Config{Resolver: res, MaxConnsPerRelay: -1}, false},
		{"helo with space", delivery.Config{Resolver: res, HeloName: "a b"}, false},
	}
	for _, tt := range tests {
		tr, err := delivery.New(tt.cfg)
		if (err == nil) != tt.ok {
			t.Errorf("%s: New error = %v, want ok %v", tt.name, err, tt.ok)
		}
		if tr != nil {
			tr.Close()
		}
	}
}
