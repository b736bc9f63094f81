package validation

import (
	"os"
	"path/filepath"
	"testing"
	"time"
)

func TestFileListsReload(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	block, allow := filepath.Join(dir, "block.txt"), filepath.Join(dir, "allow.txt")
	os.WriteFile(block, []byte("# spammy\nBad.Example\nx@Evil.example\n\n"), 0o600)
	l, err := LoadFileLists(block, allow) // allow.txt does not exist yet
	if err == nil {
		t.Fatalf("missing allow file accepted")
	}
	os.WriteFile(allow, []byte("friend@bad.example\n"), 0o600)
	if l, err = LoadFileLists(block, allow); err != nil {
		t.Fatal(err)
	}
	if !l.BlockedDomain("bad.example") || !l.BlockedAddress("x@evil.example") || !l.AllowedAddress("friend@bad.example") || l.BlockedDomain("good.example") {
		t.Fatalf("lists not loaded as written")
	}
	if changed, _ := l.Reload(); changed {
		t.Fatalf("Reload without a change reported a change")
	}
	later := time.Now().Add(time.Minute)
	os.WriteFile(block, []byte("good.example\n"), 0o600)
	os.Chtimes(block, later, later)
	if changed, err := l.Reload(); !changed || err != nil {
		t.Fatalf("Reload after edit = %v, %v", changed, err)
	}
	if l.BlockedDomain("bad.example") || !l.BlockedDomain("good.example") {
		t.Fatalf("reloaded lists are stale")
	}
	os.Remove(block)
	if _, err := l.Reload(); err == nil || !l.BlockedDomain("good.example") {
		t.Fatalf("a vanished file must keep the old lists and report: %v", err)
	}
}
