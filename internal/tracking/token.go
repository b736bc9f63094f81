package tracking

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"strconv"
	"strings"
)

// Kind is what a tracking URL does. It is part of the signed text, so a
// token made for one kind is worthless for another.
type Kind byte

// The kinds of tracking URL and the path segment each lives under.
const (
	Open        Kind = 'o'
	Click       Kind = 'c'
	Unsubscribe Kind = 'u'
)

// Token names one delivery (so one message and one recipient) and, for
// clicks, the position of the link in that message's HTML.
type Token struct {
	Kind       Kind
	DeliveryID int64
	Link       int // 0 for opens and unsubscribes
}

// Signer makes and checks tokens. The MAC covers the kind, the delivery and
// the link, so tokens can be neither forged nor enumerated, and altering
// any part of one (another link index, another delivery) invalidates it.
type Signer struct{ key []byte }

// NewSigner returns a Signer for key (at least 32 bytes of secret).
func NewSigner(key []byte) Signer { return Signer{key: key} }

// macLen is the MAC's length in bytes: 128 bits, plenty against guessing
// over HTTP, short enough for tidy URLs.
const macLen = 16

// Encode returns the token's URL-safe text: ID.LINK.MAC.
func (s Signer) Encode(t Token) string {
	return strconv.FormatInt(t.DeliveryID, 36) + "." + strconv.Itoa(t.Link) + "." +
		base64.RawURLEncoding.EncodeToString(s.mac(t))
}

// Decode checks text as a token of kind k and returns it; false for
// anything that Encode did not make with this key for that kind.
func (s Signer) Decode(k Kind, text string) (Token, bool) {
	if len(text) > 80 {
		return Token{}, false
	}
	idText, rest, ok1 := strings.Cut(text, ".")
	linkText, macText, ok2 := strings.Cut(rest, ".")
	if !ok1 || !ok2 {
		return Token{}, false
	}
	id, err1 := strconv.ParseInt(idText, 36, 64)
	link, err2 := strconv.Atoi(linkText)
	mac, err3 := base64.RawURLEncoding.DecodeString(macText)
	if err1 != nil || err2 != nil || err3 != nil || id <= 0 || link < 0 {
		return Token{}, false
	}
	t := Token{Kind: k, DeliveryID: id, Link: link}
	// Only the canonical text is accepted, so one token has one spelling.
	if s.Encode(t) != text || !hmac.Equal(mac, s.mac(t)) {
		return Token{}, false
	}
	return t, true
}

func (s Signer) mac(t Token) []byte {
	m := hmac.New(sha256.New, s.key)
	m.Write([]byte{byte(t.Kind), 0})
	m.Write(strconv.AppendInt(nil, t.DeliveryID, 10))
	m.Write([]byte{0})
	m.Write(strconv.AppendInt(nil, int64(t.Link), 10))
	return m.Sum(nil)[:macLen]
}
