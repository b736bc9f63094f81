package spool_test

import (
	"bytes"
	"errors"
	"io"
	"os"
	"testing"
	"time"

	"github.com/postline/postline/internal/spool"
)

func files(t *testing.T, dir string) int {
	t.Helper()
	e, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	return len(e)
}

func TestReadSpoolsPastMemory(t *testing.T) {
	t.Parallel()
	for _, size := range []int{0, 1000, spool.Memory, spool.Memory + 1, 3*spool.Memory + 12345} {
		dir := t.TempDir()
		want := bytes.Repeat([]byte("0123456789abcdef"), size/16+1)[:size]
		b, err := spool.Read(bytes.NewReader(want), dir)
		if err != nil {
			t.Fatal(err)
		}
		if n, spooled := files(t, dir), size > spool.Memory; (n == 1) != spooled {
			t.Fatalf("%d bytes: %d files in the spool directory, want spooled=%v", size, n, spooled)
		}
		got, err := b.Bytes()
		if err != nil || !bytes.Equal(got, want) || b.Len() != int64(size) {
			t.Fatalf("%d bytes: read back %d bytes (Len %d, %v), want them all", size, len(got), b.Len(), err)
		}
		b.Close()
		if n := files(t, dir); n != 0 {
			t.Fatalf("%d bytes: %d files left after Close", size, n)
		}
	}
}

// A body that stops short of its end (a client gone mid-DATA) returns the
// reader's error and leaves no file.
func TestReadFailureLeavesNothing(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	broken := errors.New("connection reset")
	r := io.MultiReader(bytes.NewReader(make([]byte, 2*spool.Memory)), iotestErr{broken})
	if _, err := spool.Read(r, dir); !errors.Is(err, broken) {
		t.Fatalf("Read = %v, want the reader's error", err)
	}
	if n := files(t, dir); n != 0 {
		t.Fatalf("%d files left after a failed read", n)
	}
}

type iotestErr struct{ err error }

func (e iotestErr) Read([]byte) (int, error) { return 0, e.err }

func TestSweepRemovesOnlyStaleSpoolFiles(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	old, fresh, other := dir+"/spool-1", dir+"/spool-2", dir+"/postline.db"
	for _, p := range []string{old, fresh, other} {
		os.WriteFile(p, []byte("x"), 0o600)
	}
	past := time.Now().Add(-3 * time.Hour)
	os.Chtimes(old, past, past)
	os.Chtimes(other, past, past)
	if n, err := spool.Sweep(dir, 2*time.Hour); n != 1 || err != nil {
		t.Fatalf("Sweep = %d, %v, want 1 removed", n, err)
	}
	for p, want := range map[string]bool{old: false, fresh: true, other: true} {
		if _, err := os.Stat(p); (err == nil) != want {
			t.Fatalf("%s exists = %v, want %v", p, err == nil, want)
		}
	}
}
