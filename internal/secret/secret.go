// Package secret encrypts small secrets at rest (SMTP passwords, DKIM
// private keys) with AES-256-GCM, so a copy of the database alone does not
// give them away.
package secret

import (
	"crypto/aes"
	"crypto/cipher"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// Box seals and opens secrets with one key.
type Box struct{ aead cipher.AEAD }

// NewBox returns a Box for a 32-byte key.
func NewBox(key []byte) (*Box, error) {
	if len(key) != 32 {
		return nil, fmt.Errorf("secret: key must be 32 bytes, got %d", len(key))
	}
	block, err := aes.NewCipher(key)
	if err != nil {
		return nil, err
	}
	aead, err := cipher.NewGCM(block)
	if err != nil {
		return nil, err
	}
	return &Box{aead: aead}, nil
}

// Seal encrypts plain; the result is base64 text for a TEXT column.
func (b *Box) Seal(plain []byte) string {
	nonce := make([]byte, b.aead.NonceSize())
	if _, err := rand.Read(nonce); err != nil {
		panic(err) // crypto/rand never fails on supported platforms
	}
	return "v1:" + base64.StdEncoding.EncodeToString(b.aead.Seal(nonce, nonce, plain, nil))
}

// Open decrypts what Seal produced.
func (b *Box) Open(sealed string) ([]byte, error) {
	raw, ok := strings.CutPrefix(sealed, "v1:")
	if !ok {
		return nil, errors.New("secret: unknown format")
	}
	data, err := base64.StdEncoding.DecodeString(raw)
	if err != nil {
		return nil, fmt.Errorf("secret: %w", err)
	}
	n := b.aead.NonceSize()
	if len(data) < n {
		return nil, errors.New("secret: too short")
	}
	plain, err := b.aead.Open(nil, data[:n], data[n:], nil)
	if err != nil {
		return nil, errors.New("secret: cannot decrypt (wrong secret key?)")
	}
	return plain, nil
}

// Fingerprint names a key without revealing it: 16 hex digits of an
// HMAC-SHA-256 under the key. Databases record it so a process with the
// wrong key can be refused before it seals anything.
func Fingerprint(key []byte) string {
	m := hmac.New(sha256.New, key)
	m.Write([]byte("postline secret-key fingerprint v1"))
	return hex.EncodeToString(m.Sum(nil)[:8])
}

// Decode parses a key's base64 form.
func Decode(encoded string) ([]byte, error) {
	key, err := base64.StdEncoding.DecodeString(strings.TrimSpace(encoded))
	if err != nil || len(key) != 32 {
		return nil, errors.New("secret: a secret key is base64 of 32 bytes (make one with `head -c32 /dev/urandom | base64`)")
	}
	return key, nil
}

// Encode is a key's base64 form, as Decode and the key file take it.
func Encode(key []byte) string { return base64.StdEncoding.EncodeToString(key) }

// KeyFile is where a data directory keeps its key.
func KeyFile(dataDir string) string { return filepath.Join(dataDir, "secret.key") }

// Found is a key and where it came from, for messages.
type Found struct {
	Key   []byte
	Where string // "--secret-key", "POSTLINE_SECRET_KEY", "file /abs/secret.key"
}

// FindKey returns the configured key (encoded, set by where) or else the
// data directory's key file. ok is false when there is neither; nothing is
// created (NewKeyFile does that, once the database says a new key is
// right).
func FindKey(encoded, where, dataDir string) (f Found, ok bool, err error) {
	if encoded != "" {
		key, err := Decode(encoded)
		if err != nil {
			return f, false, fmt.Errorf("%s: %w", where, err)
		}
		return Found{Key: key, Where: where}, true, nil
	}
	path := KeyFile(dataDir)
	b, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return f, false, nil
	}
	if err != nil {
		return f, false, fmt.Errorf("secret: %w", err)
	}
	key, err := Decode(string(b))
	if err != nil {
		return f, false, fmt.Errorf("file %s: %w", path, err)
	}
	return Found{Key: key, Where: "file " + path}, true, nil
}

// NewKeyFile makes a random key in dataDir/secret.key (mode 0600). When
// another process made the file first, that key is returned instead.
func NewKeyFile(dataDir string) (Found, error) {
	key := make([]byte, 32)
	if _, err := rand.Read(key); err != nil {
		return Found{}, err
	}
	if err := os.MkdirAll(dataDir, 0o700); err != nil {
		return Found{}, fmt.Errorf("secret: %w", err)
	}
	path := KeyFile(dataDir)
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if errors.Is(err, os.ErrExist) { // another process won the race
		found, _, err := FindKey("", "", dataDir)
		return found, err
	}
	if err != nil {
		return Found{}, fmt.Errorf("secret: %w", err)
	}
	defer f.Close()
	if _, err := f.WriteString(Encode(key) + "\n"); err != nil {
		return Found{}, fmt.Errorf("secret: %w", err)
	}
	return Found{Key: key, Where: "file " + path + " (created now)"}, f.Close()
}

// WriteKeyFile replaces path with key atomically (a temporary file renamed
// over it), mode 0600.
func WriteKeyFile(path string, key []byte) error {
	tmp, err := os.CreateTemp(filepath.Dir(path), ".secret.key-*")
	if err != nil {
		return fmt.Errorf("secret: %w", err)
	}
	defer os.Remove(tmp.Name())
	if err := tmp.Chmod(0o600); err != nil {
		tmp.Close()
		return fmt.Errorf("secret: %w", err)
	}
	if _, err := tmp.WriteString(Encode(key) + "\n"); err != nil {
		tmp.Close()
		return fmt.Errorf("secret: %w", err)
	}
	if err := tmp.Sync(); err != nil {
		tmp.Close()
		return fmt.Errorf("secret: %w", err)
	}
	if err := tmp.Close(); err != nil {
		return fmt.Errorf("secret: %w", err)
	}
	return os.Rename(tmp.Name(), path)
}

// NewKey returns a random key.
func NewKey() []byte {
	key := make([]byte, 32)
	if _, err := rand.Read(key); err != nil {
		panic(err) // crypto/rand never fails on supported platforms
	}
	return key
}
