package testutil

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
)

// BuildBinary builds the postline command at pkg (a path relative to the
// calling test's package) into dir, for tests that run the real binary.
func BuildBinary(dir, pkg string) (string, error) {
	bin := filepath.Join(dir, "postline")
	out, err := exec.Command("go", "build", "-o", bin, pkg).CombinedOutput()
	if err != nil {
		return "", fmt.Errorf("go build: %v\n%s", err, out)
	}
	return bin, nil
}

// Binary builds the postline command at Pkg once, on first use, into a
// temporary directory that Cleanup removes; a test binary that needs it
// declares one and calls Cleanup from TestMain after m.Run.
type Binary struct {
	Pkg  string // relative to the calling test's package
	once sync.Once
	dir  string
	bin  string
	err  error
}

// Build returns the built binary's path.
func (b *Binary) Build() (string, error) {
	b.once.Do(func() {
		if b.dir, b.err = os.MkdirTemp("", "postline-bin"); b.err == nil {
			b.bin, b.err = BuildBinary(b.dir, b.Pkg)
		}
	})
	return b.bin, b.err
}

// Cleanup removes what Build made, if anything (it builds nothing).
func (b *Binary) Cleanup() {
	b.once.Do(func() {}) // a Build after Cleanup builds nothing either
	if b.dir != "" {
		os.RemoveAll(b.dir)
	}
}
