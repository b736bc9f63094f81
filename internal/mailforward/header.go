package mailforward

import (
	"bufio"
	"bytes"
	"crypto/sha256"
	"io"
	nettextproto "net/textproto"
	"strings"

	"github.com/emersion/go-message/textproto"
)

// message is a received message split for a forward: its header's fields
// as written, in order, and its body byte for byte.
type message struct {
	fields []field
	body   []byte
}

// field is one header field: its canonical key, its value unfolded, and
// the bytes it was written with (its CRLF included).
type field struct {
	key, value string
	raw        []byte
}

// parseMessage splits raw; a header that cannot be read is an error.
func parseMessage(raw []byte) (message, error) {
	br := bufio.NewReader(bytes.NewReader(raw))
	h, err := textproto.ReadHeader(br)
	if err != nil {
		return message{}, err
	}
	var m message
	for f := h.Fields(); f.Next(); {
		r, err := f.Raw()
		if err != nil {
			return message{}, err
		}
		m.fields = append(m.fields, field{key: f.Key(), value: f.Value(), raw: r})
	}
	m.body, _ = io.ReadAll(br) // from memory: cannot fail
	return m, nil
}

// values are the values of key's fields, in order.
func (m message) values(key string) []string {
	var out []string
	for _, f := range m.fields {
		if strings.EqualFold(f.key, key) {
			out = append(out, f.value)
		}
	}
	return out
}

// bytes is the message as it will be passed on.
func (m message) bytes() []byte {
	var b bytes.Buffer
	for _, f := range m.fields {
		b.Write(f.raw)
	}
	b.WriteString("\r\n")
	b.Write(m.body)
	return b.Bytes()
}

// digest identifies the message as its sender wrote it: every field but
// the Authentication-Results and Received fields this server put on top
// (receiving.Handoff), and the body. A sending server that delivers the
// same message again (after a 451, or a lost 250) gives the same digest.
func (m message) digest() [32]byte {
	fs := m.fields
	if len(fs) > 0 && strings.EqualFold(fs[0].key, "Authentication-Results") {
		fs = fs[1:]
	}
	if len(fs) > 0 && strings.EqualFold(fs[0].key, "Received") {
		fs = fs[1:]
	}
	h := sha256.New()
	for _, f := range fs {
		h.Write(f.raw)
	}
	h.Write([]byte("\r\n"))
	h.Write(m.body)
	var out [32]byte
	h.Sum(out[:0])
	return out
}

// newField is key: value written as a header field, folded at its white
// space where it can be. value comes from this package's own formatting;
// a CR or LF in it all the same becomes a space, so that it stays one
// field.
func newField(key, value string) field {
	value = strings.NewReplacer("\r", " ", "\n", " ").Replace(value)
	var h textproto.Header
	h.Set(key, value)
	var b bytes.Buffer
	textproto.WriteHeader(&b, h) //nolint:errcheck // to memory
	return field{key: nettextproto.CanonicalMIMEHeaderKey(key), value: value, raw: bytes.TrimSuffix(b.Bytes(), []byte("\r\n"))}
}
