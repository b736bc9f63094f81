package sending

import (
	"bytes"
	"context"
	"errors"
	"net/mail"
	"strings"
	"testing"
	"time"

	"github.com/postline/postline/internal/apperr"
	"github.com/postline/postline/internal/domain"
	"github.com/postline/postline/internal/message"
)

var intakeNow = time.Date(2026, 11, 24, 12, 0, 0, 0, time.UTC)

// The submitter's domains in these tests: shop.example (authentication
// domain bounces.shop.example) and other.example are verified,
// pending.example is not. victim.example is another tenant's.
func intakeDomains() []domain.Domain {
	v := intakeNow
	return []domain.Domain{{ID: 1, Name: "shop.example", AuthDomain: "bounces.shop.example", VerifiedAt: &v},
		{ID: 2, Name: "other.example", VerifiedAt: &v}, {ID: 3, Name: "pending.example"}}
}

func intake() *Service { return &Service{cfg: Config{Now: func() time.Time { return intakeNow }}} }

func prepareRaw(raw string, edit func(*RawInput)) (RawPrepared, error) {
	in := RawInput{Data: []byte(raw), Senders: func(context.Context) ([]domain.Domain, error) { return intakeDomains(), nil }}
	if edit != nil {
		edit(&in)
	}
	return intake().PrepareRaw(context.Background(), in)
}

func TestPrepareRaw(t *testing.T) {
	t.Parallel()
	raw := "From: Shop <orders@shop.example>\r\nTo: a@x.example\r\nBcc: secret@x.example\r\nSubject: =?utf-8?q?Caf=C3=A9?=\r\n" +
		"X-Postline-Tag: a, b\r\nX-Postline-Tag: c\r\nX-Postline-Track: none\r\nContent-Type: text/html\r\n\r\n<p>body line</p>\r\n"
	p, err := prepareRaw(raw, nil)
	if err != nil {
		t.Fatal(err)
	}
	head, body, _ := strings.Cut(string(p.Data), "\r\n\r\n")
	if body != "<p>body line</p>\r\n" {
		t.Errorf("body %q changed", body)
	}
	for _, gone := range []string{"Bcc", "secret@", "X-Postline"} {
		if strings.Contains(head, gone) {
			t.Errorf("header keeps %q:\n%s", gone, head)
		}
	}
	if !strings.Contains(head, "Message-Id: <") || !strings.Contains(head, "@shop.example>") || !strings.Contains(head, "Date: Tue, 24 Nov 2026") {
		t.Errorf("Message-ID and Date not added:\n%s", head)
	}
	if p.Subject != "Café" || strings.Join(p.Tags, ",") != "a,b,c" || p.Track != "none" || p.From[0] != "orders@shop.example" ||
		p.FromName != "Shop" || p.Domain.Name != "shop.example" || p.HTML != "<p>body line</p>\r\n" {
		t.Errorf("prepared %+v", p)
	}
}

type refusal int

const (
	accepted  refusal = iota
	malformed         // apperr.Invalid, neither of the others: 554 5.6.0
	sender            // ErrSenderHeader: 550 5.7.1
	smuggling         // ErrUnsafeBytes: 550 5.6.0
)

func kindOf(err error) refusal {
	switch {
	case err == nil:
		return accepted
	case errors.Is(err, ErrSenderHeader):
		return sender
	case errors.Is(err, ErrUnsafeBytes):
		return smuggling
	case apperr.CodeOf(err) == apperr.Invalid:
		return malformed
	}
	return -1
}

// TestPrepareRawSenderRules: exactly one From, at most one Sender, Resent-*
// blocks with one of each, and every From, Sender, Resent-From and
// Resent-Sender address at a verified domain of the submitter, whatever
// the case of the field name (RFC 5322 §3.6); bare CR and NUL refused
// anywhere (SMTP smuggling).
func TestPrepareRawSenderRules(t *testing.T) {
	t.Parallel()
	const date = "Resent-Date: Tue, 24 Nov 2026 11:00:00 +0000\r\n"
	cases := []struct {
		name, head string
		want       refusal
		says       string // in the refusal, or the domain that sends
	}{
		{"one From", "From: a@shop.example\r\n", accepted, "shop.example"},
		{"another of the account's domains", "From: a@other.example\r\n", accepted, "other.example"},
		{"the authentication domain", "From: a@bounces.shop.example\r\n", accepted, "shop.example"},
		{"case of the domain", "From: a@SHOP.Example\r\n", accepted, "shop.example"},
		{"display name that looks like an address", "From: =?utf-8?q?ceo=40victim.example?= <a@shop.example>\r\n", accepted, "shop.example"},
		{"Sender at another own domain", "From: a@shop.example\r\nSender: b@other.example\r\n", accepted, "shop.example"},
		{"a resent block", "From: a@shop.example\r\nResent-From: b@other.example\r\n" + date + "Resent-To: c@x.example\r\nResent-Sender: d@shop.example\r\n", accepted, "shop.example"},
		{"two resent blocks", "Resent-From: b@other.example\r\n" + date + "Resent-From: b@shop.example\r\n" + date + "From: a@shop.example\r\n", accepted, "shop.example"},

		{"no From", "Subject: none\r\n", malformed, "From"},
		{"a second From", "From: me@shop.example\r\nFrom: ceo@victim.example\r\n", sender, "2 From"},
		{"a second from, lower case", "From: me@shop.example\r\nfrom: ceo@victim.example\r\n", sender, "2 From"},
		{"two From of the account", "From: me@shop.example\r\nFROM: you@shop.example\r\n", sender, "2 From"},
		{"FROM: upper case", "FROM: ceo@victim.example\r\n", sender, "From header's domain victim.example"},
		{"From with a space before the colon", "From : ceo@victim.example\r\n", sender, "white space before its colon"},
		{"own From with a tab before the colon", "From\t: a@shop.example\r\n", sender, "white space before its colon"},
		{"a second address in From", "From: me@shop.example, ceo@victim.example\r\n", sender, "victim.example"},
		{"a group in From", "From: team: ceo@victim.example;\r\n", sender, "victim.example"},
		{"an unverified domain", "From: a@pending.example\r\n", sender, "pending.example"},
		{"a look-alike domain", "From: a@shop.example.victim.example\r\n", sender, "shop.example.victim.example"},
		{"an address literal", "From: a@[127.0.0.1]\r\n", sender, "From"},
		{"From that is not an address", "From: nobody\r\n", sender, "From header must be"},
		{"Sender of another tenant", "From: a@shop.example\r\nsender: ceo@victim.example\r\n", sender, "Sender header's domain victim.example"},
		{"two Sender", "From: a@shop.example\r\nSender: a@shop.example\r\nSender: b@shop.example\r\n", sender, "2 Sender"},
		{"Resent-From of another tenant", "From: a@shop.example\r\nResent-From: ceo@victim.example\r\n" + date, sender, "Resent-From header's domain victim.example"},
		{"RESENT-FROM upper case", "From: a@shop.example\r\nRESENT-FROM: ceo@victim.example\r\n" + date, sender, "Resent-From"},
		{"Resent-Sender of another tenant", "From: a@shop.example\r\nResent-From: a@shop.example\r\n" + date + "Resent-Sender: ceo@victim.example\r\n", sender, "Resent-Sender header's domain"},
		{"two Resent-From in one block", "From: a@shop.example\r\nResent-From: a@shop.example\r\nResent-From: b@shop.example\r\n" + date, sender, "Resent-Date and one Resent-From"},
		{"a block without Resent-Date", "From: a@shop.example\r\nResent-From: a@shop.example\r\n", sender, "Resent-Date"},
		{"a block without Resent-From", "From: a@shop.example\r\n" + date + "Resent-To: b@x.example\r\n", sender, "Resent-From"},
		{"Resent-From that is not an address", "From: a@shop.example\r\nResent-From: (none)\r\n" + date, sender, "Resent-From header must be"},

		{"bare CR in the body", "From: a@shop.example\r\n\r\nbody\r.\r\nMAIL FROM:<ceo@victim.example>\r\n", smuggling, "bare CR"},
		{"bare CR after a line", "From: a@shop.example\r\n\r\nbody\r\n\r.\r\nMAIL FROM:<ceo@victim.example>\r\n", smuggling, "bare CR"},
		{"bare CR in the header", "From: a@shop.example\rBcc: x@y.example\r\n", smuggling, "bare CR"},
		{"NUL", "From: a@shop.example\r\nSubject: a\x00b\r\n", smuggling, "NUL"},
	}
	for _, c := range cases {
		raw := c.head + "\r\nbody\r\n"
		if strings.Contains(c.head, "\r\n\r\n") {
			raw = c.head
		}
		p, err := prepareRaw(raw, nil)
		switch got := kindOf(err); {
		case got != c.want:
			t.Errorf("%s: %q: got %v (kind %d), want kind %d", c.name, raw, err, got, c.want)
		case err != nil && !strings.Contains(err.Error(), c.says):
			t.Errorf("%s: %v does not say %q", c.name, err, c.says)
		case err == nil && p.Domain.Name != c.says:
			t.Errorf("%s: sent through %q, want %q", c.name, p.Domain.Name, c.says)
		}
	}
}

// TestPrepareRawThroughADomain: a door that names the sending domain (the
// /v3/ path) gets messages whose first From is at it; other sender
// addresses may be at the account's other domains.
func TestPrepareRawThroughADomain(t *testing.T) {
	t.Parallel()
	through := func(in *RawInput) { d := intakeDomains()[1]; in.Domain = &d }
	if p, err := prepareRaw("From: a@other.example\r\nSender: b@shop.example\r\n\r\nx", through); err != nil || p.Domain.Name != "other.example" {
		t.Errorf("From at the path's domain: %v, %+v", err, p.Domain)
	}
	if _, err := prepareRaw("From: a@shop.example\r\n\r\nx", through); kindOf(err) != sender || !strings.Contains(err.Error(), "other.example") {
		t.Errorf("From at another of the account's domains: %v, want a sender refusal naming other.example", err)
	}
}

// TestPrepareRawRemovesTrace: the fields the API refuses as custom headers
// (message.TraceHeaders) are removed from a submitted message, whatever
// their case; a forwarded message keeps its trace, is not held to the
// sender rules, and its X-Postline-* fields are removed unread but for
// the forward marks (loops); bare CR is refused in forward mode too.
func TestPrepareRawRemovesTrace(t *testing.T) {
	t.Parallel()
	trace := "Received: from evil.example by mx.victim.example\r\nReturn-Path: <ceo@victim.example>\r\n" +
		"DKIM-Signature: v=1; d=victim.example; b=abc\r\nARC-Seal: i=1; cv=none\r\narc-message-signature: i=1\r\n" +
		"Authentication-Results: mx.victim.example; dmarc=pass\r\nX-Postline-Sender: ceo@victim.example\r\n" +
		"x-postline-list-unsubscribe: <https://evil.example>\r\nX-Postline-Tag: smuggled\r\nX-Mailer: kept\r\n"
	p, err := prepareRaw("From: a@shop.example\r\n"+trace+"\r\nbody\r\n", nil)
	if err != nil {
		t.Fatal(err)
	}
	head, _, _ := strings.Cut(string(p.Data), "\r\n\r\n")
	for _, line := range strings.Split(head, "\r\n") {
		name, _, _ := strings.Cut(line, ":")
		if message.IsTraceHeader(strings.TrimSpace(name)) {
			t.Errorf("the submitted message keeps %q", line)
		}
	}
	if !strings.Contains(head, "X-Mailer: kept") {
		t.Errorf("an ordinary field was removed:\n%s", head)
	}

	route := intakeDomains()[0]
	forward := func(in *RawInput) { in.Forward, in.Domain, in.Senders = true, &route, nil }
	mark := "x-postline-forwarded-by: 0123456789abcdef01234567@shop.example\r\n"
	p, err = prepareRaw("From: ceo@victim.example\r\nFrom: second@victim.example\r\n"+mark+trace+"\r\nbody\r\n", forward)
	if err != nil {
		t.Fatalf("a forwarded message: %v", err)
	}
	head, _, _ = strings.Cut(string(p.Data), "\r\n\r\n")
	for _, kept := range []string{"Received:", "DKIM-Signature:", "ARC-Seal:", "arc-message-signature:", "Authentication-Results:"} {
		if !strings.Contains(head, kept) {
			t.Errorf("the forwarded message lost %s:\n%s", kept, head)
		}
	}
	if !strings.Contains(head, "\r\n"+mark) {
		t.Errorf("the forwarded message lost its forward mark:\n%s", head)
	}
	head = strings.Replace(head, mark, "", 1)
	if strings.Contains(strings.ToLower(head), "x-postline") || strings.Contains(head, "Return-Path") || len(p.Tags) > 0 {
		t.Errorf("the forwarded message keeps X-Postline-* or Return-Path, or its tags were read (%v):\n%s", p.Tags, head)
	}
	if p.Domain.Name != "shop.example" || !strings.HasSuffix(p.MessageID, "@victim.example") {
		t.Errorf("forwarded through %q with Message-ID %q", p.Domain.Name, p.MessageID)
	}
	if _, err := prepareRaw("From: ceo@victim.example\r\n\r\nbody\r\n\r.\r\n", forward); kindOf(err) != smuggling {
		t.Errorf("a forwarded message with a bare CR: %v, want refused", err)
	}
}

// TestRequestSenders: an API send's Sender (h:Sender) and its Resent-From
// and Resent-Sender custom headers follow the same rules; the submitter's
// other domains are read only when an address is not at the send's own.
func TestRequestSenders(t *testing.T) {
	t.Parallel()
	doms := intakeDomains()
	for _, c := range []struct {
		name    string
		r       Request
		field   string // "" accepted
		lookups int
	}{
		{"Sender at the send's domain", Request{Sender: "a@shop.example"}, "", 0},
		{"Sender at another own domain", Request{Sender: "a@other.example"}, "", 1},
		{"Sender of another tenant", Request{Sender: "ceo@victim.example"}, "sender", 1},
		{"Resent-From at the send's domain", Request{Headers: `{"Resent-From": "a@shop.example"}`}, "", 0},
		{"Resent-From of another tenant", Request{Headers: `{"Resent-From": "ceo@victim.example"}`}, "headers.Resent-From", 1},
		{"resent-sender of another tenant", Request{Headers: `{"resent-sender": "Boss <ceo@victim.example>"}`}, "headers.resent-sender", 1},
		{"Resent-From not an address", Request{Headers: `{"Resent-From": "nobody"}`}, "headers.Resent-From", 0},
		{"a variable in Resent-From", Request{Percent: true, Headers: `{"Resent-From": "%recipient.from%@shop.example"}`}, "headers.Resent-From", 0},
		{"Resent-From twice", Request{Headers: `{"Resent-From": "a@shop.example", "resent-from": "ceo@victim.example"}`}, "headers.resent-from", 0},
	} {
		lookups := 0
		c.r.From, c.r.To, c.r.Subject, c.r.Text = "a@shop.example", []string{"b@x.example"}, "s", "t"
		c.r.Senders = func(context.Context) ([]domain.Domain, error) { lookups++; return doms, nil }
		chk, err := validate(c.r, "shop.example", Limits{}.withDefaults())
		if err == nil {
			err = intake().checkRequestSenders(context.Background(), doms[0], c.r, chk.headers)
		}
		e, _ := apperr.As(err)
		switch {
		case c.field == "" && err != nil:
			t.Errorf("%s: %v", c.name, err)
		case c.field != "" && (e == nil || e.Code != apperr.Invalid || len(e.Fields[c.field]) == 0):
			t.Errorf("%s: %v, want a refusal naming %s", c.name, err, c.field)
		case lookups != c.lookups:
			t.Errorf("%s: the account's domains read %d times, want %d", c.name, lookups, c.lookups)
		}
	}
}

// FuzzPrepareRaw: whatever a client sends (malformed or repeated fields,
// odd case, folding, bare CR or LF, NUL, 8-bit bytes), PrepareRaw answers
// with an apperr refusal or a message in which another parser (net/mail)
// finds exactly one From, at most one Sender, every sender address at the
// submitter's verified domains, no trace field, no bare CR or NUL, and the
// body unchanged. It never panics.
func FuzzPrepareRaw(f *testing.F) {
	for _, seed := range []string{
		"From: a@shop.example\r\n\r\nx",
		"From: a@shop.example\nSubject: bare LF\n\nbody\n",
		"From: \xff\xfe@shop.example\r\nSubject: \x80\x81\r\n\r\n\xc3\x28",
		"From a@shop.example\r\n\r\n",
		"From: a@shop.example\r\nX: " + strings.Repeat("y", 5000) + "\r\n\r\nz",
		":\r\n\r\n",
		"From: me@shop.example\r\nfrom: ceo@victim.example\r\n\r\nx",
		"From: me@shop.example\r\n From: ceo@victim.example\r\n\r\nx",
		"From: me@shop.example\r\nFrom : ceo@victim.example\r\n\r\nx",
		"From: me@shop.example\r\nSender: ceo@victim.example\r\n\r\nx",
		"From: me@shop.example\r\nResent-From: ceo@victim.example\r\nResent-Date: x\r\n\r\nx",
		"From: me@shop.example\r\nReceived: x\r\nDKIM-Signature: y\r\nARC-Seal: z\r\n\r\nx",
		"From: me@shop.example\r\n\r\nbody\r\n\r.\r\nMAIL FROM:<ceo@victim.example>\r\n",
		"From: me@shop.example\r\n\r\nbody\x00",
		"From: \"ceo@victim.example\" <me@shop.example>\r\n\r\nx",
		"From: =?utf-8?b?Y2VvQHZpY3RpbS5leGFtcGxl?= <me@shop.example>\r\n\r\nx",
	} {
		f.Add([]byte(seed))
	}
	doms := intakeDomains()
	f.Fuzz(func(t *testing.T, raw []byte) {
		p, err := intake().PrepareRaw(context.Background(), RawInput{Data: raw,
			Senders: func(context.Context) ([]domain.Domain, error) { return doms, nil }})
		if err != nil {
			if kindOf(err) == -1 {
				t.Fatalf("error %v is not a refusal", err)
			}
			return
		}
		if len(p.From) == 0 || p.MessageID == "" {
			t.Fatalf("accepted without From or Message-ID: %+v", p)
		}
		if message.CheckUnsafeBytes(p.Data) != nil {
			t.Fatalf("the prepared message has a bare CR or NUL: %q", p.Data)
		}
		if i := bytes.Index(raw, []byte("\r\n\r\n")); i >= 0 && !bytes.HasSuffix(p.Data, raw[i+4:]) {
			t.Fatalf("body changed")
		}
		m, err := mail.ReadMessage(bytes.NewReader(p.Data))
		if err != nil {
			return // net/mail reads less than go-message does; nothing to compare
		}
		if n := len(m.Header["From"]); n != 1 {
			t.Fatalf("net/mail sees %d From fields in %q", n, p.Data)
		}
		if n := len(m.Header["Sender"]); n > 1 {
			t.Fatalf("net/mail sees %d Sender fields in %q", n, p.Data)
		}
		for name, values := range m.Header {
			if message.IsTraceHeader(name) {
				t.Fatalf("the prepared message keeps %s: %q", name, p.Data)
			}
			if !isSenderField(name) {
				continue
			}
			for _, v := range values {
				list, err := m.Header.AddressList(name)
				if err != nil {
					continue // net/mail cannot read it (a charset it lacks): go-message did
				}
				for _, a := range list {
					if _, ok := OwnerOf(doms, a.Address); !ok {
						t.Fatalf("%s: %q (%s) is not the submitter's: %q", name, v, a.Address, p.Data)
					}
				}
			}
		}
	})
}
