package message

import (
	"errors"
	"fmt"
	"mime"
	"net/mail"
	"slices"
	"strings"

	"github.com/postline/postline/internal/apperr"
)

// headerFields validates p and returns the top-level fields before
// MIME-Version, each folded and CRLF-terminated.
func (p Params) headerFields() ([]string, error) {
	if p.Date.IsZero() {
		return nil, errors.New("message: Date is required")
	}
	if err := checkMessageID(p.MessageID); err != nil {
		return nil, err
	}
	if err := checkText("from_name", "the sender name", p.FromName); err != nil {
		return nil, err
	}
	if err := checkText("subject", "the subject", p.Subject); err != nil {
		return nil, err
	}
	from, err := formatAddress("from", p.FromName, p.From)
	if err != nil {
		return nil, err
	}
	to, err := formatAddress("to", p.ToName, p.To)
	if err != nil {
		return nil, err
	}
	f := fieldList{{"From", from, "from"}}
	if p.Sender != "" {
		sender, err := formatAddress("sender", "", p.Sender)
		if err != nil {
			return nil, err
		}
		f = append(f, field{"Sender", sender, "sender"})
	}
	toAt := len(f)
	f = append(f, field{"To", to, "to"})
	if len(p.VisibleCc) > 0 {
		list := func(param string, ms []Mailbox) (string, error) {
			parts := make([]string, len(ms))
			for i, m := range ms {
				if parts[i], err = formatAddress(param, m.Name, m.Addr); err != nil {
					return "", err
				}
			}
			return strings.Join(parts, ", "), nil
		}
		if f[toAt].value, err = list("to", p.VisibleTo); err != nil {
			return nil, err
		}
		cc, err := list("cc", p.VisibleCc)
		if err != nil {
			return nil, err
		}
		f = append(f, field{"Cc", cc, "cc"})
	}
	if p.ReplyTo != "" {
		rt, err := formatAddress("reply_to", "", p.ReplyTo)
		if err != nil {
			return nil, err
		}
		f = append(f, field{"Reply-To", rt, "reply_to"})
	}
	f = append(f,
		field{"Subject", mime.QEncoding.Encode("utf-8", p.Subject), "subject"},
		field{"Date", p.Date.Format(dateLayout), ""},
		field{"Message-ID", p.MessageID, ""})
	if p.ListUnsubscribe != "" {
		// The service generates it, so a bad value is a bug, not a 422.
		if checkText("", "", p.ListUnsubscribe) != nil || !isASCII(p.ListUnsubscribe) {
			return nil, fmt.Errorf("message: List-Unsubscribe %q is not printable ASCII", p.ListUnsubscribe)
		}
		f = append(f, field{"List-Unsubscribe", p.ListUnsubscribe, ""})
		switch p.ListUnsubscribePost {
		case "":
			f = append(f, field{"List-Unsubscribe-Post", "List-Unsubscribe=One-Click", ""})
		case "-":
		default:
			f = append(f, field{"List-Unsubscribe-Post", p.ListUnsubscribePost, ""})
		}
	}
	for _, name := range sortedKeys(p.Headers) {
		if err := CheckHeaderName(name); err != nil {
			return nil, err
		}
		v, err := customValue(name, p.Headers[name])
		if err != nil {
			return nil, err
		}
		f = append(f, field{name, v, "headers"})
	}
	for _, name := range sortedKeys(p.ExtraHeaders) {
		if err := checkExtraName(name); err != nil {
			return nil, err
		}
		v, err := customValue(name, p.ExtraHeaders[name])
		if err != nil { // the service's own value: a bug, not a 422
			return nil, fmt.Errorf("message: extra header: %v", err)
		}
		f = append(f, field{name, v, ""})
	}
	return f.format()
}

// formatAddress renders one mailbox; net/mail quotes the local part when
// needed and RFC 2047-encodes a non-ASCII display name.
func formatAddress(param, name, addr string) (string, error) {
	if err := checkText(param, "the address", addr); err != nil {
		return "", err
	}
	a, err := mail.ParseAddress(addr)
	if err != nil || a.Name != "" || strings.ContainsAny(addr, "<>") {
		return "", apperr.Field(param, fmt.Sprintf("%q is not a bare email address", addr))
	}
	return (&mail.Address{Name: name, Address: a.Address}).String(), nil
}

func sortedKeys(m map[string]string) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

// checkMessageID accepts "<left@right>" of printable ASCII without spaces.
func checkMessageID(id string) error {
	inner, ok1 := strings.CutPrefix(id, "<")
	inner, ok2 := strings.CutSuffix(inner, ">")
	if !ok1 || !ok2 || !strings.Contains(inner, "@") || len(id) > 250 {
		return fmt.Errorf("message: Message-ID %q is not <id@domain>", id)
	}
	for i := 0; i < len(inner); i++ {
		if c := inner[i]; c <= ' ' || c > '~' || c == '<' || c == '>' {
			return fmt.Errorf("message: Message-ID %q is not <id@domain>", id)
		}
	}
	return nil
}

// field is one top-level header field; param names the request field to
// blame when the value cannot be folded ("" for generated values).
type field struct{ name, value, param string }

type fieldList []field

// format folds every field, in order.
func (l fieldList) format() ([]string, error) {
	out := make([]string, 0, len(l)+3)
	for _, f := range l {
		s, err := fold(f.name, f.value)
		if err != nil && f.param != "" {
			return nil, apperr.Field(f.param, fmt.Sprintf("%s is too long: a header line would exceed %d octets", f.name, maxLine))
		} else if err != nil {
			return nil, err
		}
		out = append(out, s)
	}
	return out, nil
}

var errUnfoldable = errors.New("message: header line longer than 998 octets")

// fold writes "name: value" CRLF-terminated, breaking before a space
// (RFC 5322 §2.2.3) once a line would pass 78 octets. A break is never put
// before an empty run, so no line is white space only, and unfolding gives
// back value exactly. A word that alone passes 998 octets is an error.
func fold(name, value string) (string, error) {
	var b strings.Builder
	b.Grow(len(name) + len(value) + 8)
	b.WriteString(name)
	b.WriteByte(':')
	n := len(name) + 1
	for i, word := range strings.Split(value, " ") {
		if i > 0 && word != "" && n+1+len(word) > foldAt {
			b.WriteString("\r\n")
			n = 0
		}
		b.WriteByte(' ')
		b.WriteString(word)
		if n += 1 + len(word); n > maxLine {
			return "", errUnfoldable
		}
	}
	b.WriteString("\r\n")
	return b.String(), nil
}
