package secret

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestSealOpen(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	if _, ok, err := FindKey("", "", dir); ok || err != nil {
		t.Fatalf("FindKey in an empty dir = %v, %v; want none and no file made", ok, err)
	}
	made, err := NewKeyFile(dir)
	if err != nil || !strings.Contains(made.Where, filepath.Join(dir, "secret.key")) {
		t.Fatalf("NewKeyFile = %+v, %v", made, err)
	}
	again, ok, err := FindKey("", "", dir)
	if err != nil || !ok || !bytes.Equal(made.Key, again.Key) {
		t.Fatalf("FindKey after NewKeyFile = %x, %v; want the key written first", again.Key, err)
	}
	if again, err := NewKeyFile(dir); err != nil || !bytes.Equal(made.Key, again.Key) {
		t.Fatalf("a second NewKeyFile = %x, %v; want the existing key (another process won)", again.Key, err)
	}
	if fi, _ := os.Stat(filepath.Join(dir, "secret.key")); fi.Mode().Perm() != 0o600 {
		t.Errorf("secret.key mode = %v, want 0600", fi.Mode().Perm())
	}
	box, _ := NewBox(made.Key)
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
	if _, _, err := FindKey("not base64!", "POSTLINE_SECRET_KEY", dir); err == nil || !strings.Contains(err.Error(), "POSTLINE_SECRET_KEY") {
		t.Fatalf("FindKey of a malformed key = %v; want an error naming where it came from", err)
	}
}

func TestFingerprintAndKeyFile(t *testing.T) {
	t.Parallel()
	a, b := NewKey(), NewKey()
	if Fingerprint(a) != Fingerprint(a) || Fingerprint(a) == Fingerprint(b) || len(Fingerprint(a)) != 16 {
		t.Fatalf("fingerprints %s %s: want stable, distinct, 16 hex digits", Fingerprint(a), Fingerprint(b))
	}
	if strings.Contains(Fingerprint(a), Encode(a)[:8]) {
		t.Fatal("fingerprint shows the key")
	}
	path := filepath.Join(t.TempDir(), "secret.key")
	if err := WriteKeyFile(path, a); err != nil {
		t.Fatal(err)
	}
	if err := WriteKeyFile(path, b); err != nil {
		t.Fatal(err)
	}
	found, ok, err := FindKey("", "", filepath.Dir(path))
	if err != nil || !ok || !bytes.Equal(found.Key, b) {
		t.Fatalf("after WriteKeyFile the file holds %x, %v; want the second key", found.Key, err)
	}
	if fi, _ := os.Stat(path); fi.Mode().Perm() != 0o600 {
		t.Errorf("mode = %v, want 0600", fi.Mode().Perm())
	}
}
