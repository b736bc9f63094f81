package spool

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"time"
)

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
