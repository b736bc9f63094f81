package message

import (
	"bytes"
	"errors"
	"io"
	"testing"
	"testing/iotest"
)

// TestUnsafeBytes: a bare CR (the \r.\r\n of SMTP smuggling) or a NUL
// anywhere is found at its offset, by the slice check and by the reader
// whatever the size of its reads; CRLF and bare LF are fine.
func TestUnsafeBytes(t *testing.T) {
	t.Parallel()
	cases := []struct {
		in   string
		want int64 // -1: fine
		nul  bool
	}{
		{"From: a@b\r\n\r\nbody\r\n", -1, false},
		{"From: a@b\n\nbare LF is normalised on output\n", -1, false},
		{"", -1, false},
		{"body\r.\r\nMAIL FROM:<x@y>\r\n", 4, false},
		{"body\r\n\r.\r\nMAIL FROM:<x@y>\r\n", 6, false},
		{"ends in CR\r", 10, false},
		{"\r", 0, false},
		{"a\x00b\r\n", 1, true},
		{"a\rb\x00", 1, false},
		{"a\x00b\rc", 1, true},
		{"\r\n\r\n\r\r\n", 4, false},
	}
	for _, c := range cases {
		err := CheckUnsafeBytes([]byte(c.in))
		checkUnsafe(t, "CheckUnsafeBytes", c.in, err, c.want, c.nul)
		for _, size := range []int{1, 2, 3, 1 << 10} {
			r := NewUnsafeBytesReader(iotest.OneByteReader(bytes.NewReader([]byte(c.in))))
			if size > 1 {
				r = NewUnsafeBytesReader(&chunked{b: []byte(c.in), n: size})
			}
			got, err := io.ReadAll(r)
			checkUnsafe(t, "the reader", c.in, err, c.want, c.nul)
			if err == nil && string(got) != c.in {
				t.Errorf("the reader changed %q into %q", c.in, got)
			}
		}
	}
}

func checkUnsafe(t *testing.T, what, in string, err error, want int64, nul bool) {
	t.Helper()
	var ue *UnsafeBytesError
	switch {
	case want < 0 && err != nil:
		t.Errorf("%s(%q) = %v, want nil", what, in, err)
	case want >= 0 && (!errors.As(err, &ue) || !errors.Is(err, ErrUnsafeBytes)):
		t.Errorf("%s(%q) = %v, want an UnsafeBytesError", what, in, err)
	case want >= 0 && (ue.Offset != want || ue.NUL != nul):
		t.Errorf("%s(%q) = %v (offset %d, NUL %v), want offset %d, NUL %v", what, in, err, ue.Offset, ue.NUL, want, nul)
	}
}

// chunked returns n bytes a read.
type chunked struct {
	b []byte
	n int
}

func (c *chunked) Read(p []byte) (int, error) {
	if len(c.b) == 0 {
		return 0, io.EOF
	}
	k := min(c.n, len(c.b), len(p))
	copy(p, c.b[:k])
	c.b = c.b[k:]
	return k, nil
}
