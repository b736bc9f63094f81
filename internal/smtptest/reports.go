package smtptest

import (
	"fmt"
	"strings"

	"github.com/emersion/go-smtp"
)

// DSN returns an RFC 3464 delivery status notification about recipient,
// shaped as Postfix sends one: action is failed, delayed or delivered,
// status an RFC 3463 code, messageID the bounced message's id without
// angle brackets. Lines end in CRLF, ready for DATA.
func DSN(recipient, action, status, messageID string) string {
	return crlf(fmt.Sprintf(`From: Mail Delivery System <MAILER-DAEMON@mx.rcpt.example.net>
To: bounces
Subject: Undelivered Mail Returned to Sender
MIME-Version: 1.0
Content-Type: multipart/report; report-type=delivery-status; boundary="b1"

--b1
Content-Type: text/plain

The mail system could not deliver your message.

--b1
Content-Type: message/delivery-status

Reporting-MTA: dns; mx.rcpt.example.net

Original-Recipient: rfc822; %[1]s
Final-Recipient: rfc822; %[1]s
Action: %[2]s
Status: %[3]s
Remote-MTA: dns; mx.rcpt.example.net
Diagnostic-Code: smtp; %[3]s reported by the test

--b1
Content-Type: text/rfc822-headers

Message-ID: <%[4]s>
To: %[1]s

--b1--
`, recipient, action, status, messageID))
}

// Complaint returns an RFC 5965 (ARF) abuse report about a message to
// recipient, as a mailbox provider's feedback loop sends one.
func Complaint(recipient, messageID string) string {
	return crlf(fmt.Sprintf(`From: feedback@fbl.rcpt.example.net
To: fbl
Subject: Abuse report
MIME-Version: 1.0
Content-Type: multipart/report; report-type=feedback-report; boundary="b2"

--b2
Content-Type: text/plain

This is an abuse report.

--b2
Content-Type: message/feedback-report

Feedback-Type: abuse
Version: 1
Original-Rcpt-To: <%[1]s>

--b2
Content-Type: message/rfc822

Message-ID: <%[2]s>
To: %[1]s
Subject: Your order

Thanks!
--b2--
`, recipient, messageID))
}

func crlf(s string) string { return strings.ReplaceAll(s, "\n", "\r\n") }

// Deliver hands body to the SMTP server at addr from the null sender (as
// bounces come) and returns the first refusal: a *smtp.SMTPError for a
// reply, nil when the message was accepted.
func Deliver(addr string, rcpts []string, body string) error {
	c, err := smtp.Dial(addr)
	if err != nil {
		return err
	}
	defer c.Close()
	if err := c.Hello("mx.rcpt.example.net"); err != nil {
		return err
	}
	if err := c.Mail("", nil); err != nil {
		return err
	}
	for _, r := range rcpts {
		if err := c.Rcpt(r, nil); err != nil {
			return err
		}
	}
	w, err := c.Data()
	if err != nil {
		return err
	}
	if _, err := w.Write([]byte(body)); err != nil {
		return err
	}
	if err := w.Close(); err != nil {
		return err
	}
	return c.Quit()
}
