package event

import (
	"strconv"
	"unicode/utf8"
)

// Log entries are rendered by appending, not through encoding/json's
// reflection: a stream writes up to 500,000 of them, and this keeps the
// cost per entry to one pass over its bytes with no allocation.

// AppendJSON appends e as the API's log entry object (the list, the
// stream and webhooks all send this shape).
func AppendJSON(b []byte, e Entry) []byte {
	b = append(b, `{"id":`...)
	b = strconv.AppendInt(b, e.ID, 10)
	b = append(b, `,"message_id":`...)
	b = appendJSONString(b, e.MessageID)
	b = append(b, `,"event_type":`...)
	b = appendJSONString(b, string(e.Type))
	b = append(b, `,"sender":`...)
	b = appendJSONString(b, e.Sender)
	b = append(b, `,"recipient":`...)
	b = appendJSONString(b, e.Recipient)
	b = append(b, `,"subject":`...)
	b = appendJSONString(b, e.Subject)
	b = append(b, `,"tags":`...)
	if e.Tags == "" {
		b = append(b, "null"...)
	} else {
		b = appendJSONString(b, e.Tags)
	}
	b = append(b, `,"created_at":"`...)
	b = e.CreatedAt.UTC().AppendFormat(b, "2006-01-02T15:04:05.000Z07:00")
	b = append(b, `","details":`...)
	if len(e.Details) == 0 {
		b = append(b, "{}"...)
	} else {
		b = append(b, e.Details...) // checked to be a JSON object when recorded
	}
	return append(b, '}')
}

// AppendJSONArray appends a JSON array of entries.
func AppendJSONArray(b []byte, es []Entry) []byte {
	b = append(b, '[')
	for i, e := range es {
		if i > 0 {
			b = append(b, ',')
		}
		b = AppendJSON(b, e)
	}
	return append(b, ']')
}

const hexDigits = "0123456789abcdef"

// appendJSONString appends s as a JSON string the way encoding/json does
// without HTML escaping: control characters escaped, invalid UTF-8 replaced
// by U+FFFD, U+2028 and U+2029 escaped for JavaScript consumers.
func appendJSONString(b []byte, s string) []byte {
	b = append(b, '"')
	start := 0
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			if c >= 0x20 && c != '"' && c != '\\' {
				i++
				continue
			}
			b = append(b, s[start:i]...)
			switch c {
			case '"', '\\':
				b = append(b, '\\', c)
			case '\n':
				b = append(b, '\\', 'n')
			case '\r':
				b = append(b, '\\', 'r')
			case '\t':
				b = append(b, '\\', 't')
			case '\b':
				b = append(b, '\\', 'b')
			case '\f':
				b = append(b, '\\', 'f')
			default:
				b = append(b, '\\', 'u', '0', '0', hexDigits[c>>4], hexDigits[c&0xf])
			}
			i++
			start = i
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && size == 1:
			b = append(b, s[start:i]...)
			b = append(b, `\ufffd`...)
		case r == '\u2028' || r == '\u2029':
			b = append(b, s[start:i]...)
			b = append(b, '\\', 'u', '2', '0', '2', hexDigits[r&0xf])
		default:
			i += size
			continue
		}
		i += size
		start = i
	}
	b = append(b, s[start:]...)
	return append(b, '"')
}
