package secret

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"
)

func TestSealOpen(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	key, err := LoadKey("", dir)
	if err != nil {
		t.Fatal(err)
	}
	again, err := LoadKey("", dir)
	if err != nil || !bytes.Equal(key, again) {
		t.Fatalf("second LoadKey = %x, %v; want the key written first", again, err)
	}
	if fi, _ := os.Stat(filepath.Join(dir, "secret.key")); fi.Mode().Perm() != 0o600 {
		t.Errorf("secret.key mode = %v, want 0600", fi.Mode().Perm())
	}
	box, _ := NewBox(key)
	sealed := box.Seal([]byte("hunter2"))
	if bytes.Contains([]byte(sealed), []byte("hunter2")) {
		t.Fatalf("sealed text %q contains the plaintext", sealed)
	}
	got, err := box.Open(sealed)
	if err != nil || string(got) != "hunter2" {
		t.Fatalf("Open = %q, %v; want hunter2", got, err)
	}
	other, _ := NewBox(bytes.Repeat([]byte{1}, 32))
	if _, err := other.Open(sealed); err == nil {
		t.Fatal("Open with another key succeeded")
	}
	if _, err := LoadKey("not base64!", dir); err == nil {
		t.Fatal("LoadKey accepted a malformed key")
	}
}
