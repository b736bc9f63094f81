package validation

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/postline/postline/internal/background"
)

// FileLists are operator lists read from two text files, one entry a line:
// an address (anything with an @) or a domain; blank lines and lines
// starting with # are ignored. They reload when a file changes, so an
// operator edits a file and the running server follows without a restart.
type FileLists struct {
	blockPath, allowPath string
	cur                  atomic.Pointer[StaticLists]
	mu                   sync.Mutex
	stamp                string // mtimes and sizes of the files last loaded
}

var _ Lists = (*FileLists)(nil)

// LoadFileLists reads the lists; an empty path means an empty list.
func LoadFileLists(blockPath, allowPath string) (*FileLists, error) {
	f := &FileLists{blockPath: blockPath, allowPath: allowPath}
	f.cur.Store(NewStaticLists(ListEntries{}))
	if _, err := f.Reload(); err != nil {
		return nil, err
	}
	return f, nil
}

// Reload re-reads the files when they changed since the last load, and
// reports whether it did. A file that fails to read keeps the old lists.
func (f *FileLists) Reload() (bool, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	stamp := fileStamp(f.blockPath) + "|" + fileStamp(f.allowPath)
	if stamp == f.stamp {
		return false, nil
	}
	var e ListEntries
	var err error
	if e.BlockedDomains, e.BlockedAddresses, err = readList(f.blockPath); err != nil {
		return false, err
	}
	if e.AllowedDomains, e.AllowedAddresses, err = readList(f.allowPath); err != nil {
		return false, err
	}
	f.cur.Store(NewStaticLists(e))
	f.stamp = stamp
	return true, nil
}

// Watch reloads every interval until ctx ends; errors go to report.
func (f *FileLists) Watch(ctx context.Context, interval time.Duration, report func(changed bool, err error)) {
	background.Every(ctx, interval, func(context.Context) bool {
		if changed, err := f.Reload(); changed || err != nil {
			report(changed, err)
		}
		return false
	})
}

func fileStamp(path string) string {
	if path == "" {
		return ""
	}
	fi, err := os.Stat(path)
	if err != nil {
		return "missing"
	}
	return fmt.Sprintf("%d/%d", fi.ModTime().UnixNano(), fi.Size())
}

func readList(path string) (domains, addrs []string, err error) {
	if path == "" {
		return nil, nil, nil
	}
	file, err := os.Open(path)
	if err != nil {
		return nil, nil, fmt.Errorf("validation: list: %w", err)
	}
	defer file.Close()
	sc := bufio.NewScanner(file)
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		if strings.Contains(line, "@") {
			addrs = append(addrs, line)
		} else {
			domains = append(domains, line)
		}
	}
	if err := sc.Err(); err != nil {
		return nil, nil, fmt.Errorf("validation: list %s: %w", path, err)
	}
	return domains, addrs, nil
}

// BlockedDomain implements Lists.
func (f *FileLists) BlockedDomain(d string) bool { return f.cur.Load().BlockedDomain(d) }

// BlockedAddress implements Lists.
func (f *FileLists) BlockedAddress(a string) bool { return f.cur.Load().BlockedAddress(a) }

// AllowedDomain implements Lists.
func (f *FileLists) AllowedDomain(d string) bool { return f.cur.Load().AllowedDomain(d) }

// AllowedAddress implements Lists.
func (f *FileLists) AllowedAddress(a string) bool { return f.cur.Load().AllowedAddress(a) }
