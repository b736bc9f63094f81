package spool

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
)

const prefix = "spool-"

// Body is a received body and the budgets it holds until Close.
type Body struct {
	sp   *Spool
	mem  []byte
	file *os.File
	size int64
	// What the body holds of each budget.
	memory, disk, processing int64
}

// Read reads r to its end. Close the Body on every path; when Read fails
// (the reader's own error, ErrWrite or ErrFull), nothing is left behind
// and nothing held.
func (s *Spool) Read(r io.Reader) (*Body, error) {
	b := &Body{sp: s}
	if err := b.receive(r); err != nil {
		b.Close()
		return nil, err
	}
	return b, nil
}

func (b *Body) receive(r io.Reader) error {
	buf := make([]byte, 0, SmallBody) // outside the budget
	for {
		if len(buf) == cap(buf) {
			if len(buf) > BodyMemory {
				return b.spill(r, buf)
			}
			var ok bool
			if buf, ok = b.grow(buf); !ok {
				return b.spill(r, buf)
			}
		}
		n, err := r.Read(buf[len(buf):cap(buf)])
		buf = buf[:len(buf)+n]
		b.size = int64(len(buf))
		if err == io.EOF {
			if cap(buf) == SmallBody { // held at its size: a request may have many small parts
				buf = bytes.Clone(buf)
			}
			b.mem = buf
			return nil
		}
		if err != nil {
			return err
		}
	}
}

// grow returns buf with twice the room (at most BodyMemory+1), its cost
// taken from the memory budget; buf and false when the budget has no
// room left.
func (b *Body) grow(buf []byte) ([]byte, bool) {
	c := min(2*cap(buf), BodyMemory+1)
	more := int64(c - cap(buf))
	if !b.sp.memory.take(more) {
		return buf, false
	}
	b.memory += more
	grown := make([]byte, len(buf), c)
	copy(grown, buf)
	return grown, true
}

// spill goes on in a file: head (what arrived so far) first, then the
// rest of r. The head's memory is given back once it is on disk.
func (b *Body) spill(r io.Reader, head []byte) error {
	f, err := os.CreateTemp(b.sp.cfg.Dir, prefix+"*")
	if errors.Is(err, os.ErrNotExist) { // the first spooled body, or a data directory tidied meanwhile
		if err = os.MkdirAll(b.sp.cfg.Dir, 0o700); err == nil {
			f, err = os.CreateTemp(b.sp.cfg.Dir, prefix+"*")
		}
	}
	if err != nil {
		return fmt.Errorf("%w: %w", ErrWrite, err)
	}
	b.file = f
	if err := b.write(head); err != nil {
		return err
	}
	b.sp.memory.give(b.memory)
	b.memory = 0
	chunk := make([]byte, 32<<10) // the head is on disk and may be collected
	for {
		n, rerr := r.Read(chunk)
		if err := b.write(chunk[:n]); err != nil {
			return err
		}
		if rerr == io.EOF {
			return nil
		}
		if rerr != nil {
			return rerr
		}
	}
}

// write appends p to the file within the disk budget.
func (b *Body) write(p []byte) error {
	if len(p) == 0 {
		return nil
	}
	if !b.sp.disk.take(int64(len(p))) {
		return ErrFull
	}
	b.disk += int64(len(p))
	if _, err := b.file.Write(p); err != nil {
		return fmt.Errorf("%w: %w", ErrWrite, err)
	}
	b.size = b.disk
	return nil
}

// Len is the body's size in bytes.
func (b *Body) Len() int64 { return b.size }

// Bytes is the whole body in memory. A body that waited on disk is read
// back after taking its size from the processing budget, waiting at most
// the Spool's Wait or until ctx ends (ErrBusy); its file is removed once
// read. The bytes count against the budgets until Close.
func (b *Body) Bytes(ctx context.Context) ([]byte, error) {
	if b.file == nil {
		return b.mem, nil
	}
	n, err := b.sp.acquire(ctx, b.size)
	if err != nil {
		return nil, err
	}
	b.processing = n
	out := make([]byte, b.size)
	if _, err := b.file.ReadAt(out, 0); err != nil {
		return nil, fmt.Errorf("spool: reading the temporary file back: %w", err)
	}
	b.mem = out
	return out, b.removeFile()
}

// Close removes the temporary file, if any, and gives back what the body
// holds of every budget. It may be called more than once, and on nil.
func (b *Body) Close() error {
	if b == nil {
		return nil
	}
	err := b.removeFile()
	b.sp.memory.give(b.memory)
	b.sp.release(b.processing)
	b.memory, b.processing, b.mem = 0, 0, nil
	return err
}

func (b *Body) removeFile() error {
	if b.file == nil {
		return nil
	}
	name := b.file.Name()
	b.file.Close()
	b.file = nil
	err := os.Remove(name)
	b.sp.disk.give(b.disk) // once the file is gone: the directory never holds more than the budget
	b.disk = 0
	return err
}
