// Package secret encrypts small secrets at rest (SMTP passwords, DKIM
// private keys) with AES-256-GCM, so a copy of the database alone does not
// give them away.
package secret

import (
	"crypto/aes"
	"crypto/cipher"
	"crypto/rand"
	"encoding/base64"
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

// LoadKey returns the key from its base64 form, or, when encoded is empty,
// from dataDir/secret.key, creating that file (mode 0600) on first use.
func LoadKey(encoded, dataDir string) ([]byte, error) {
	if encoded != "" {
		key, err := base64.StdEncoding.DecodeString(strings.TrimSpace(encoded))
		if err != nil || len(key) != 32 {
			return nil, errors.New("secret: secret-key must be base64 of 32 bytes")
		}
		return key, nil
	}
	path := filepath.Join(dataDir, "secret.key")
	if b, err := os.ReadFile(path); err == nil {
		return LoadKey(string(b), dataDir)
	} else if !errors.Is(err, os.ErrNotExist) {
		return nil, fmt.Errorf("secret: %w", err)
	}
	key := make([]byte, 32)
	if _, err := rand.Read(key); err != nil {
		return nil, err
	}
	if err := os.MkdirAll(dataDir, 0o700); err != nil {
		return nil, fmt.Errorf("secret: %w", err)
	}
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if errors.Is(err, os.ErrExist) { // another process won the race
		return LoadKey("", dataDir)
	}
	if err != nil {
		return nil, fmt.Errorf("secret: %w", err)
	}
	defer f.Close()
	if _, err := f.WriteString(base64.StdEncoding.EncodeToString(key) + "\n"); err != nil {
		return nil, fmt.Errorf("secret: %w", err)
	}
	return key, f.Close()
}
