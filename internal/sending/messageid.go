package sending

import (
	"context"
	"fmt"
	"strings"

	"github.com/postline/postline/internal/domain"
	"github.com/postline/postline/internal/message"
)

// maxMessageIDLen bounds a given Message-ID (angle brackets included), as
// the message builder does.
const maxMessageIDLen = 250

// oneMessageID is the Message-ID every copy of r carries when r asks for
// one (OneMessageID): the sender's own (MessageID) once checked, else a
// new one at d. "" when each copy gets its own.
func (s *Service) oneMessageID(ctx context.Context, d domain.Domain, r Request) (string, error) {
	if !r.OneMessageID {
		if r.MessageID != "" {
			return "", fmt.Errorf("sending: a MessageID without OneMessageID")
		}
		return "", nil
	}
	if strings.TrimSpace(r.MessageID) == "" {
		return strings.Trim(message.NewMessageID(d.Name), "<>"), nil
	}
	return checkGivenMessageID(ctx, d, r)
}

// checkGivenMessageID accepts a sender's Message-ID when it is an RFC 5322
// msg-id (§3.6.4, angle brackets optional here) whose left part is a
// dot-atom and whose right part is a verified domain of the account (or
// its authentication domain): an application may number its own
// messages, but not in another's name. It returns the id without angle
// brackets.
func checkGivenMessageID(ctx context.Context, d domain.Domain, r Request) (string, error) {
	v := strings.TrimSpace(r.MessageID)
	id := v
	if strings.HasPrefix(id, "<") || strings.HasSuffix(id, ">") {
		inner, ok1 := strings.CutPrefix(id, "<")
		inner, ok2 := strings.CutSuffix(inner, ">")
		if !ok1 || !ok2 {
			return "", badMessageID(v, "its angle brackets do not match")
		}
		id = inner
	}
	left, right, ok := strings.Cut(id, "@")
	switch {
	case len(id)+2 > maxMessageIDLen:
		return "", badMessageID(v, fmt.Sprintf("it is longer than %d characters", maxMessageIDLen))
	case !ok || strings.Contains(right, "@"):
		return "", badMessageID(v, "it must be <left@domain>")
	case !dotAtom(left) || !dotAtom(right):
		return "", badMessageID(v, "its left part and domain must be dot-atoms of printable ASCII (RFC 5322 §3.6.4)")
	}
	c := senderCheck{own: &d, lookup: r.Senders}
	_, mine, err := c.owner(ctx, id) // a msg-id of dot-atoms reads as an address
	if err != nil {
		return "", err
	}
	if !mine {
		return "", badMessageID(v, fmt.Sprintf("its domain %s is not a verified domain of this account", right))
	}
	return id, nil
}

func badMessageID(v, why string) error {
	return senderError("message_id", fmt.Sprintf("The Message-Id %q cannot be used: %s.", trimForMessage(v), why))
}

// dotAtom reports whether s is RFC 5322 dot-atom-text: atext runs joined
// by single dots.
func dotAtom(s string) bool {
	if s == "" || s[0] == '.' || s[len(s)-1] == '.' || strings.Contains(s, "..") {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		alnum := c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9'
		if !alnum && c != '.' && !strings.ContainsRune("!#$%&'*+-/=?^_`{|}~", rune(c)) {
			return false
		}
	}
	return true
}
