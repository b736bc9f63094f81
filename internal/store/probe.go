package store

import (
	"context"
	"fmt"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// metaReadyProbe is the meta row ProbeWrite writes.
const metaReadyProbe = "ready-probe"

// minFreeBytes is the free space SQLite's disk must have for ProbeWrite:
// room for the write-ahead log to grow to its checkpoint size (1,000 pages
// of 4 KiB). A full disk can still take a small write, as SQLite reuses its
// log file and the pages it frees, while every write that needs a page
// more fails: a probe that only wrote would call such a disk ready.
const minFreeBytes = 4 << 20

// ProbeWrite commits a small write (the meta row "ready-probe"): ready
// means a write commits, not that the database answers a read. On SQLite
// it also checkpoints the write-ahead log into the database file and
// checks the disk has minFreeBytes left.
func (db *DB) ProbeWrite(ctx context.Context) error {
	if err := NewMeta(db).Set(ctx, metaReadyProbe, strconv.FormatInt(time.Now().UnixMilli(), 10)); err != nil {
		return fmt.Errorf("store: probe write: %w", err)
	}
	if db.Dialect != SQLite {
		return nil
	}
	var busy, frames, copied int
	if err := db.w.QueryRowContext(ctx, `PRAGMA wal_checkpoint(PASSIVE)`).Scan(&busy, &frames, &copied); err != nil {
		return fmt.Errorf("store: probe checkpoint: %w", err)
	}
	dir := filepath.Dir(strings.TrimPrefix(db.URL, "sqlite:"))
	var st syscall.Statfs_t
	if err := syscall.Statfs(dir, &st); err != nil {
		return fmt.Errorf("store: free space of %s: %w", dir, err)
	}
	if free := uint64(st.Bavail) * uint64(st.Bsize); free < minFreeBytes {
		// ENOSPC: what the next write that needs a page will meet.
		return fmt.Errorf("store: %s has %d bytes free, less than the %d SQLite needs to go on writing: %w",
			dir, free, minFreeBytes, syscall.ENOSPC)
	}
	return nil
}
