package message

import (
	"bytes"
	"errors"
	"fmt"
	"io"
)

// ErrUnsafeBytes marks a message that holds a bare CR (a CR not followed
// by LF) or a NUL. Receivers disagree on what such bytes mean: a next hop
// that ends DATA on <CR>.<CR><LF> runs what follows as a transaction of
// its own (SMTP smuggling), so no such message is taken in or sent out.
// Bare LF is not among them: the SMTP writer turns it into CRLF.
var ErrUnsafeBytes = errors.New("message: bare CR or NUL")

// UnsafeBytesError is the first bare CR or NUL of a message; it matches
// ErrUnsafeBytes.
type UnsafeBytesError struct {
	Offset int64 // from the first byte of the message
	NUL    bool  // a NUL, else a bare CR
}

func (e *UnsafeBytesError) Error() string {
	if e.NUL {
		return fmt.Sprintf("message: a NUL byte at byte %d", e.Offset)
	}
	return fmt.Sprintf("message: a bare CR (not followed by LF) at byte %d", e.Offset)
}

// Is makes errors.Is(err, ErrUnsafeBytes) hold.
func (e *UnsafeBytesError) Is(target error) bool { return target == ErrUnsafeBytes }

// CheckUnsafeBytes returns an *UnsafeBytesError for the first bare CR or
// NUL of msg, or nil.
func CheckUnsafeBytes(msg []byte) error {
	if i := unsafeByte(msg, false); i >= 0 {
		return &UnsafeBytesError{Offset: int64(i), NUL: msg[i] == 0}
	}
	return nil
}

// unsafeByte is the index of the first NUL or bare CR in b, or -1. A CR
// that ends b counts as bare unless more may follow (partial).
func unsafeByte(b []byte, partial bool) int {
	first := bytes.IndexByte(b, 0)
	for off := 0; ; {
		i := bytes.IndexByte(b[off:], '\r')
		if i < 0 || (first >= 0 && off+i > first) {
			return first
		}
		off += i + 1
		if off == len(b) {
			if partial {
				return first
			}
			return off - 1
		}
		if b[off] != '\n' {
			return off - 1
		}
	}
}

// NewUnsafeBytesReader returns a reader of r that fails with an
// *UnsafeBytesError at the first bare CR or NUL (a CR at the very end of
// the stream counts as bare).
func NewUnsafeBytesReader(r io.Reader) io.Reader { return &unsafeReader{r: r} }

type unsafeReader struct {
	r      io.Reader
	off    int64 // bytes returned so far
	holdCR bool  // the last byte returned was a CR whose LF is yet to come
	err    error
}

func (u *unsafeReader) Read(p []byte) (int, error) {
	if u.err != nil {
		return 0, u.err
	}
	n, err := u.r.Read(p)
	b := p[:n]
	if u.holdCR && n > 0 {
		if b[0] != '\n' {
			u.err = &UnsafeBytesError{Offset: u.off - 1}
			return 0, u.err
		}
		u.holdCR = false
	}
	if i := unsafeByte(b, true); i >= 0 {
		u.err = &UnsafeBytesError{Offset: u.off + int64(i), NUL: b[i] == 0}
		return 0, u.err
	}
	if n > 0 {
		u.off += int64(n)
		u.holdCR = b[n-1] == '\r'
	}
	if err == io.EOF && u.holdCR {
		u.err = &UnsafeBytesError{Offset: u.off - 1}
		return 0, u.err
	}
	return n, err
}
