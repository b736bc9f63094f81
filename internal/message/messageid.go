package message

import (
	"crypto/rand"
	"encoding/base32"
	"strconv"
	"strings"
	"time"
)

// lowerBase32 encodes random bytes in characters valid in a dot-atom.
var lowerBase32 = base32.NewEncoding("abcdefghijklmnopqrstuvwxyz234567").WithPadding(base32.NoPadding)

// NewMessageID returns a new "<time.random@domain>" identifier (RFC 5322
// §3.6.4): the time in base 36 nanoseconds keeps identifiers sortable in
// logs, and 120 random bits make them unique without coordination.
func NewMessageID(domain string) string {
	var r [15]byte
	_, _ = rand.Read(r[:]) // crypto/rand.Read never fails (Go 1.24+)
	var b strings.Builder
	b.Grow(48 + len(domain))
	b.WriteByte('<')
	b.WriteString(strconv.FormatInt(time.Now().UnixNano(), 36))
	b.WriteByte('.')
	b.WriteString(lowerBase32.EncodeToString(r[:]))
	b.WriteByte('@')
	b.WriteString(domain)
	b.WriteByte('>')
	return b.String()
}
