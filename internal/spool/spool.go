// Package spool receives bodies of unknown length (SMTP DATA and BDAT,
// multipart parts) for every door of the process, within three budgets
// that one Spool shares between all of them:
//
//   - Memory (--spool-memory): an unfinished body keeps up to BodyMemory
//     (1 MiB) in memory only while the in-memory total of every body is
//     under this budget; past it the body goes to a temporary file from
//     its next byte. A client that sends slowly, or never finishes, costs
//     disk, not heap, however many such clients there are. Only the first
//     SmallBody (4 KiB) of each body is outside the budget.
//   - MaxBytes (--spool-max-bytes): the bytes in spool files at once. A
//     write past it fails with ErrFull and the body is removed: nothing is
//     stored and the client may try again, so a flood of unfinished bodies
//     cannot fill the disk the database lives on.
//   - Processing (--spool-processing-memory): a body that waited on disk
//     is read back whole, once it has all arrived, only after taking its
//     size from this budget; a reader waits at most Wait for it, then gets
//     ErrBusy (a temporary refusal). A body larger than the whole budget
//     takes all of it, alone.
//
// A body that stayed in memory keeps its share of Memory until Close; a
// body read back from disk keeps its share of Processing until Close. Close
// every Body on every path: it removes the file and gives back all the
// body holds.
package spool

import (
	"cmp"
	"context"
	"errors"
	"io"
	"os"
	"sync/atomic"
	"time"

	"golang.org/x/sync/semaphore"
)

// BodyMemory is the most of one body kept in memory while it arrives.
const BodyMemory = 1 << 20

// SmallBody is what every body keeps in memory outside the budgets: what
// a connection's own buffers hold anyway, bounded by the listeners'
// connection bounds. Form fields and short messages never touch the disk,
// so a flood that holds the budgets does not stop them.
const SmallBody = 4 << 10

// The budgets' defaults.
const (
	DefaultMemory           = 64 << 20
	DefaultMaxBytes         = 4 << 30
	DefaultProcessingMemory = 512 << 20
	DefaultWait             = 2 * time.Second
)

var (
	// ErrWrite wraps a failure of the temporary file (a full disk, say).
	ErrWrite = errors.New("spool: writing the temporary file")
	// ErrFull is a body refused because the spool files hold MaxBytes:
	// nothing of it is left; a later attempt may succeed.
	ErrFull = errors.New("spool: the spool files hold their most (MaxBytes)")
	// ErrBusy is a body not read back because bodies being processed hold
	// the Processing budget for longer than Wait; a later attempt may
	// succeed.
	ErrBusy = errors.New("spool: too many bodies being processed at once (Processing)")
)

// Config sets a Spool's directory and budgets; zero values take the
// defaults.
type Config struct {
	Dir              string        // the temporary files' directory; default the system's
	Memory           int64         // bytes of unfinished bodies in memory, all together
	MaxBytes         int64         // bytes in spool files at once
	ProcessingMemory int64         // bytes of bodies read back from disk at once
	Wait             time.Duration // how long a body waits for Processing
}

// Spool is the process's receiver of bodies; safe for concurrent use.
type Spool struct {
	cfg        Config
	memory     gauge
	disk       gauge
	processing *semaphore.Weighted
	processed  atomic.Int64 // what processing holds, for Usage
	parent     *Spool       // a Share's whole spool
}

// New returns a Spool with cfg's budgets.
func New(cfg Config) *Spool {
	cfg.Dir = cmp.Or(cfg.Dir, os.TempDir())
	cfg.Memory = cmp.Or(cfg.Memory, DefaultMemory)
	cfg.MaxBytes = cmp.Or(cfg.MaxBytes, DefaultMaxBytes)
	cfg.ProcessingMemory = cmp.Or(cfg.ProcessingMemory, DefaultProcessingMemory)
	cfg.Wait = cmp.Or(cfg.Wait, DefaultWait)
	s := &Spool{cfg: cfg, processing: semaphore.NewWeighted(cfg.ProcessingMemory)}
	s.memory.max, s.disk.max = cfg.Memory, cfg.MaxBytes
	return s
}

// Config is the spool's configuration, defaults filled in.
func (s *Spool) Config() Config { return s.cfg }

// Usage is what the budgets hold at one moment, in bytes.
type Usage struct {
	Memory     int64 // unfinished (and unclosed) bodies in memory
	Disk       int64 // spool files
	Processing int64 // bodies read back from disk, until closed
}

// Usage is what the budgets hold now.
func (s *Spool) Usage() Usage {
	return Usage{Memory: s.memory.used.Load(), Disk: s.disk.used.Load(), Processing: s.processed.Load()}
}

// ReadAll is Read, then Bytes: the whole body in memory once it has all
// arrived. The Body holds the budgets the bytes take: Close it once they
// are no longer used. On an error nothing is held (and the Body is nil).
func (s *Spool) ReadAll(ctx context.Context, r io.Reader) (*Body, []byte, error) {
	b, err := s.Read(r)
	if err != nil {
		return nil, nil, err
	}
	data, err := b.Bytes(ctx)
	if err != nil {
		b.Close()
		return nil, nil, err
	}
	return b, data, nil
}

// acquire takes n bytes of the processing budget (all of it when n is
// more), waiting at most the configured Wait or until ctx ends.
func (s *Spool) acquire(ctx context.Context, n int64) (int64, error) {
	if s.parent != nil {
		return s.parent.acquire(ctx, n)
	}
	n = min(n, s.cfg.ProcessingMemory)
	ctx, cancel := context.WithTimeout(ctx, s.cfg.Wait)
	defer cancel()
	if err := s.processing.Acquire(ctx, n); err != nil {
		return 0, ErrBusy
	}
	s.processed.Add(n)
	return n, nil
}

func (s *Spool) release(n int64) {
	if s.parent != nil {
		s.parent.release(n)
		return
	}
	if n > 0 {
		s.processed.Add(-n)
		s.processing.Release(n)
	}
}

// Share is a view of s for one door whose bodies may take at most
// fraction of s's memory and disk budgets, counted in s's too: a door
// anyone may use without a login (inbound SMTP) then cannot fill the
// budgets that tenants' sends need. The processing budget is s's.
func (s *Spool) Share(fraction float64) *Spool {
	sh := &Spool{cfg: s.cfg, processing: s.processing, parent: s}
	sh.cfg.Memory = int64(float64(s.cfg.Memory) * fraction)
	sh.cfg.MaxBytes = int64(float64(s.cfg.MaxBytes) * fraction)
	sh.memory = gauge{max: sh.cfg.Memory, parent: &s.memory}
	sh.disk = gauge{max: sh.cfg.MaxBytes, parent: &s.disk}
	return sh
}

// gauge is a count of bytes bounded by max (and by its parent's, for a
// Share), taken without waiting.
type gauge struct {
	max    int64
	used   atomic.Int64
	parent *gauge
}

// take counts n more bytes; false, counting nothing, when that would pass
// max here or in the parent.
func (g *gauge) take(n int64) bool {
	for {
		u := g.used.Load()
		if u+n > g.max {
			return false
		}
		if g.used.CompareAndSwap(u, u+n) {
			break
		}
	}
	if g.parent != nil && !g.parent.take(n) {
		g.used.Add(-n)
		return false
	}
	return true
}

func (g *gauge) give(n int64) {
	g.used.Add(-n)
	if g.parent != nil {
		g.parent.give(n)
	}
}
