package store

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestLimitDoesNotReprepare: no query of the store has a bare parameter as
// its LIMIT, which makes SQLite parse and plan the statement again each
// time it is bound (prepared.go). Each "LIMIT $" must read "+ 0" on its
// line.
func TestLimitDoesNotReprepare(t *testing.T) {
	files, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range files {
		if strings.HasSuffix(f, "_test.go") {
			continue
		}
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for i, line := range strings.Split(string(b), "\n") {
			if strings.Contains(line, "LIMIT $") && !strings.Contains(line[strings.Index(line, "LIMIT $"):], "+ 0") {
				t.Errorf("%s:%d: a bare LIMIT parameter (write LIMIT $n + 0): %s", f, i+1, strings.TrimSpace(line))
			}
		}
	}
}
