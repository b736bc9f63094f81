package attach

import (
	"archive/zip"
	"bytes"
	"compress/flate"
	"crypto/aes"
	"crypto/hmac"
	"crypto/sha1"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
)

// This file is an independent reader for WinZip AES (AE-2) entries, written
// from the specification rather than from aes.go: its own PBKDF2, its own
// byte-wise little-endian counter, and header checks.

// pbkdf2SHA1 is RFC 8018 section 5.2 with HMAC-SHA1.
func pbkdf2SHA1(password, salt []byte, iter, n int) []byte {
	var out []byte
	for block := uint32(1); len(out) < n; block++ {
		mac := hmac.New(sha1.New, password)
		mac.Write(salt)
		mac.Write(binary.BigEndian.AppendUint32(nil, block))
		u := mac.Sum(nil)
		t := append([]byte{}, u...)
		for i := 1; i < iter; i++ {
			mac = hmac.New(sha1.New, password)
			mac.Write(u)
			u = mac.Sum(nil)
			for j := range t {
				t[j] ^= u[j]
			}
		}
		out = append(out, t...)
	}
	return out[:n]
}

var errBadPassword = errors.New("wrong password (verifier mismatch)")

// readAESEntry checks f's AES headers and returns its decrypted, inflated
// contents.
func readAESEntry(f *zip.File, password string) ([]byte, error) {
	if f.Method != 99 || f.Flags&1 == 0 || f.CRC32 != 0 {
		return nil, fmt.Errorf("%s: method %d flags %#x crc %#x; want 99, encrypted, 0", f.Name, f.Method, f.Flags, f.CRC32)
	}
	x := f.Extra
	var method uint16
	found := false
	for len(x) >= 4 {
		id, size := binary.LittleEndian.Uint16(x), int(binary.LittleEndian.Uint16(x[2:]))
		if len(x) < 4+size {
			return nil, fmt.Errorf("%s: truncated extra field", f.Name)
		}
		if d := x[4 : 4+size]; id == 0x9901 {
			if size != 7 || binary.LittleEndian.Uint16(d) != 2 || string(d[2:4]) != "AE" || d[4] != 3 {
				return nil, fmt.Errorf("%s: AES extra field % x; want AE-2, AES-256", f.Name, d)
			}
			method, found = binary.LittleEndian.Uint16(d[5:]), true
		}
		x = x[4+size:]
	}
	if !found {
		return nil, fmt.Errorf("%s: no 0x9901 extra field", f.Name)
	}
	rc, err := f.OpenRaw()
	if err != nil {
		return nil, err
	}
	raw, err := io.ReadAll(rc)
	if err != nil {
		return nil, err
	}
	if len(raw) < 16+2+10 || uint64(len(raw)) != f.CompressedSize64 {
		return nil, fmt.Errorf("%s: %d stored bytes", f.Name, len(raw))
	}
	salt, pwv, ct, auth := raw[:16], raw[16:18], raw[18:len(raw)-10], raw[len(raw)-10:]
	dk := pbkdf2SHA1([]byte(password), salt, 1000, 66)
	if !bytes.Equal(dk[64:], pwv) {
		return nil, errBadPassword
	}
	mac := hmac.New(sha1.New, dk[32:64])
	mac.Write(ct)
	if !hmac.Equal(mac.Sum(nil)[:10], auth) {
		return nil, fmt.Errorf("%s: authentication code mismatch", f.Name)
	}
	block, _ := aes.NewCipher(dk[:32])
	plain := make([]byte, len(ct))
	var ctr, ks [16]byte
	ctr[0] = 1
	for i := 0; i < len(ct); i += 16 {
		block.Encrypt(ks[:], ctr[:])
		for j := i; j < min(i+16, len(ct)); j++ {
			plain[j] = ct[j] ^ ks[j-i]
		}
		for k := 0; k < 16; k++ { // little-endian increment with carry
			ctr[k]++
			if ctr[k] != 0 {
				break
			}
		}
	}
	switch method {
	case 0:
	case 8:
		if plain, err = io.ReadAll(flate.NewReader(bytes.NewReader(plain))); err != nil {
			return nil, fmt.Errorf("%s: inflate: %w", f.Name, err)
		}
	default:
		return nil, fmt.Errorf("%s: method %d", f.Name, method)
	}
	if uint64(len(plain)) != f.UncompressedSize64 {
		return nil, fmt.Errorf("%s: %d bytes; header says %d", f.Name, len(plain), f.UncompressedSize64)
	}
	return plain, nil
}
