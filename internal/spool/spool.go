// Package spool receives a body of unknown length without holding an
// unfinished one in memory: the first Memory bytes stay in memory, the
// rest goes to a temporary file that Close removes. A client that sends a
// large message slowly, or never finishes it, costs disk, not heap; the
// body is read back whole only once it has all arrived.
package spool

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"
)

// Memory is how much of a body is kept in memory before it is spooled.
const Memory = 1 << 20

// ErrWrite wraps a failure of the temporary file (a full disk, say); any
// other error Read returns is the reader's own, unwrapped.
var ErrWrite = errors.New("spool: writing the temporary file")

const prefix = "spool-"

// Body is a received body.
type Body struct {
	mem  []byte
	file *os.File
	size int64
}

// Read reads r to its end. Past Memory bytes the body goes to a file in
// dir (the system's temporary directory when empty). Close the Body on
// every path; when Read fails, nothing is left behind.
func Read(r io.Reader, dir string) (*Body, error) {
	buf := make([]byte, 0, 64<<10)
	for {
		if len(buf) == cap(buf) {
			if len(buf) > Memory {
				return spill(r, dir, buf)
			}
			grown := make([]byte, len(buf), min(2*cap(buf), Memory+1))
			copy(grown, buf)
			buf = grown
		}
		n, err := r.Read(buf[len(buf):cap(buf)])
		buf = buf[:len(buf)+n]
		if err == io.EOF {
			return &Body{mem: buf, size: int64(len(buf))}, nil
		}
		if err != nil {
			return nil, err
		}
	}
}

// ReadAll is Read, then Bytes and Close: the whole body in memory once it
// has arrived, and no file left.
func ReadAll(r io.Reader, dir string) ([]byte, error) {
	b, err := Read(r, dir)
	if err != nil {
		return nil, err
	}
	defer b.Close()
	return b.Bytes()
}

func spill(r io.Reader, dir string, head []byte) (*Body, error) {
	if dir == "" {
		dir = os.TempDir()
	}
	f, err := os.CreateTemp(dir, prefix+"*")
	if errors.Is(err, os.ErrNotExist) { // the first spooled body, or a data directory tidied meanwhile
		if err = os.MkdirAll(dir, 0o700); err == nil {
			f, err = os.CreateTemp(dir, prefix+"*")
		}
	}
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrWrite, err)
	}
	b := &Body{file: f}
	fail := func(err error) (*Body, error) {
		b.Close()
		return nil, err
	}
	if _, err := f.Write(head); err != nil {
		return fail(fmt.Errorf("%w: %w", ErrWrite, err))
	}
	b.size = int64(len(head))
	chunk := make([]byte, 32<<10) // the head is on disk and may be collected
	for {
		n, rerr := r.Read(chunk)
		if n > 0 {
			if _, err := f.Write(chunk[:n]); err != nil {
				return fail(fmt.Errorf("%w: %w", ErrWrite, err))
			}
			b.size += int64(n)
		}
		if rerr == io.EOF {
			return b, nil
		}
		if rerr != nil {
			return fail(rerr)
		}
	}
}

// Len is the body's size in bytes.
func (b *Body) Len() int64 { return b.size }

// Bytes is the whole body in memory.
func (b *Body) Bytes() ([]byte, error) {
	if b.file == nil {
		return b.mem, nil
	}
	out := make([]byte, b.size)
	if _, err := b.file.ReadAt(out, 0); err != nil {
		return nil, fmt.Errorf("spool: reading the temporary file back: %w", err)
	}
	return out, nil
}

// Close removes the temporary file, if any.
func (b *Body) Close() error {
	if b.file == nil {
		return nil
	}
	name := b.file.Name()
	b.file.Close()
	b.file = nil
	return os.Remove(name)
}

// Sweep removes the spool files in dir not written for olderThan: those of
// a process that was killed while receiving.
func Sweep(dir string, olderThan time.Duration) (removed int, err error) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return 0, nil
		}
		return 0, err
	}
	for _, e := range entries {
		if !strings.HasPrefix(e.Name(), prefix) || e.IsDir() {
			continue
		}
		info, err := e.Info()
		if err != nil || time.Since(info.ModTime()) < olderThan {
			continue
		}
		if os.Remove(filepath.Join(dir, e.Name())) == nil {
			removed++
		}
	}
	return removed, nil
}
