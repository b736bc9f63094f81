package message

import (
	"fmt"
	"mime"
	"strings"
	"unicode/utf8"

	"github.com/postline/postline/internal/apperr"
)

// TraceHeaders are the fields a receiver trusts for tracing and
// authentication, and the service's own X-Postline-* instructions: a
// sender may not write them, neither as custom headers (CheckHeaderName)
// nor in a message it submits whole (the raw intake removes them).
// Compared case-insensitively; an entry ending in "*" is a prefix. Treat
// the slice as read-only.
var TraceHeaders = []string{
	"Received", "Return-Path", "DKIM-Signature", "ARC-*", "Authentication-Results", "X-Postline-*",
}

// ProtectedHeaders are the header names a sender's custom headers may not
// use, compared case-insensitively; an entry ending in "*" is a prefix.
// They are the fields Build generates and the TraceHeaders. Treat the
// slice as read-only.
var ProtectedHeaders = append([]string{
	"From", "Sender", "To", "Cc", "Bcc", "Reply-To", "Subject", "Date",
	"Message-ID", "MIME-Version", "Content-*",
	"List-Unsubscribe", "List-Unsubscribe-Post",
}, TraceHeaders...)

// IsTraceHeader reports whether name is one of the TraceHeaders.
func IsTraceHeader(name string) bool { return matchName(TraceHeaders, name) != "" }

// Line limits of RFC 5322 §2.1.1: lines are folded before foldAt when the
// value has whitespace to fold at, and may never exceed maxLine (CRLF
// excluded). maxNameLen keeps "Name: " plus a word within foldAt.
const (
	foldAt     = 78
	maxLine    = 998
	maxNameLen = 76
)

// extraPrefix is the ProtectedHeaders entry that ExtraHeaders may use.
const extraPrefix = "X-Postline-*"

// CheckHeaderName reports whether name may be used as a custom header: an
// RFC 5322 §3.6.8 field-name (printable US-ASCII 33..126 except ':') of at most
// 76 characters that is not in ProtectedHeaders. The error is an
// *apperr.Error (Invalid) on the "headers" field.
func CheckHeaderName(name string) error {
	if err := checkNameSyntax(name); err != nil {
		return err
	}
	if p := protected(name); p != "" {
		return apperr.Field("headers", fmt.Sprintf("header %q is set by the service and cannot be overridden", name))
	}
	return nil
}

// CheckHeaderValue reports whether value can be written as the custom header
// name: no CR, LF or other control characters but tab, valid UTF-8, and
// foldable into lines of at most 998 octets once non-ASCII text is RFC 2047
// encoded. The error is an *apperr.Error (Invalid) on the "headers" field.
func CheckHeaderValue(name, value string) error {
	_, err := customValue(name, value)
	return err
}

// customValue checks value and returns it RFC 2047 encoded when not ASCII
// (RFC 6532 raw UTF-8 would need SMTPUTF8 from every relay).
func customValue(name, value string) (string, error) {
	if err := checkText("headers", "the value of header "+name, value); err != nil {
		return "", err
	}
	v := mime.QEncoding.Encode("utf-8", value)
	if _, err := fold(name, v); err != nil {
		return "", apperr.Field("headers", fmt.Sprintf("header %q is too long: a line would exceed %d octets", name, maxLine))
	}
	return v, nil
}

func checkNameSyntax(name string) error {
	switch {
	case name == "":
		return apperr.Field("headers", "header name is empty")
	case len(name) > maxNameLen:
		return apperr.Field("headers", fmt.Sprintf("header name %.20q... is longer than %d characters", name, maxNameLen))
	}
	for i := 0; i < len(name); i++ {
		if c := name[i]; c < 33 || c > 126 || c == ':' {
			return apperr.Field("headers", fmt.Sprintf("header name %q contains %q; names are printable US-ASCII without ':' (RFC 5322 §3.6.8)", name, c))
		}
	}
	return nil
}

// checkExtraName admits the service's own X-Postline-* names but nothing
// else Build generates.
func checkExtraName(name string) error {
	if err := checkNameSyntax(name); err != nil {
		return err
	}
	if p := protected(name); p != "" && p != extraPrefix {
		return fmt.Errorf("message: extra header %q collides with a generated header", name)
	}
	return nil
}

// protected returns the ProtectedHeaders entry matching name, or "".
func protected(name string) string { return matchName(ProtectedHeaders, name) }

// matchName returns the entry of list matching name, or "".
func matchName(list []string, name string) string {
	for _, p := range list {
		if prefix, ok := strings.CutSuffix(p, "*"); ok {
			if len(name) >= len(prefix) && strings.EqualFold(name[:len(prefix)], prefix) {
				return p
			}
		} else if strings.EqualFold(name, p) {
			return p
		}
	}
	return ""
}

// checkText refuses what could end a header line or corrupt it: CR, LF,
// other C0 controls but tab, DEL, and invalid UTF-8. Header injection needs
// a line break, so this is the injection guard for every value Build writes.
func checkText(param, what, s string) error {
	if !utf8.ValidString(s) {
		return apperr.Field(param, what+" is not valid UTF-8")
	}
	for _, r := range s {
		switch {
		case r == '\r' || r == '\n':
			return apperr.Field(param, what+" must not contain line breaks")
		case r < 0x20 && r != '\t' || r == 0x7f:
			return apperr.Field(param, what+" must not contain control characters")
		}
	}
	return nil
}

func isASCII(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] >= utf8.RuneSelf {
			return false
		}
	}
	return true
}
