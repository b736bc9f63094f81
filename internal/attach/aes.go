package attach

import (
	"crypto/aes"
	"crypto/cipher"
	"crypto/hmac"
	"crypto/pbkdf2"
	"crypto/rand"
	"crypto/sha1"
	"crypto/subtle"
	"encoding/binary"
	"fmt"
	"io"
)

// WinZip AES (AE-2) constants; the format is in doc.go.
const (
	methodAES      = 99
	extraAES       = 0x9901
	aesVendorAE2   = 2
	aesStrength256 = 3
	aesKeyLen      = 32
	aesSaltLen     = 16
	aesPWVLen      = 2
	aesAuthLen     = 10
	aesIterations  = 1000
)

// aesSize is the stored (compressed) size of an entry with n payload bytes:
// salt ‖ verifier ‖ ciphertext ‖ auth.
func aesSize(n int) int { return aesSaltLen + aesPWVLen + n + aesAuthLen }

// writeAES writes payload (the compressed data) to w as a WinZip AES-256
// entry with a fresh salt, encrypting in chunks so that payload, which may
// be the caller's file, is neither modified nor copied whole. The derived
// keys live only here.
func writeAES(w io.Writer, password string, payload []byte) error {
	var salt [aesSaltLen]byte
	rand.Read(salt[:]) // never fails (Go 1.24+)
	dk, err := pbkdf2.Key(sha1.New, password, salt[:], aesIterations, 2*aesKeyLen+aesPWVLen)
	if err != nil {
		return fmt.Errorf("attach: derive key: %w", err)
	}
	defer clear(dk)
	block, err := aes.NewCipher(dk[:aesKeyLen])
	if err != nil {
		return fmt.Errorf("attach: aes: %w", err)
	}
	mac := hmac.New(sha1.New, dk[aesKeyLen:2*aesKeyLen])
	if _, err := w.Write(append(salt[:], dk[2*aesKeyLen:]...)); err != nil {
		return err
	}
	ctr := ctrLE{block: block, n: 1}
	buf := make([]byte, 64*aes.BlockSize*8) // a multiple of the block size
	for len(payload) > 0 {
		k := min(len(payload), len(buf))
		ctr.xor(buf[:k], payload[:k])
		mac.Write(buf[:k])
		if _, err := w.Write(buf[:k]); err != nil {
			return err
		}
		payload = payload[k:]
	}
	_, err = w.Write(mac.Sum(nil)[:aesAuthLen])
	return err
}

// ctrLE is AES in counter mode as WinZip does it: a 128-bit little-endian
// counter that starts at 1 (cipher.NewCTR counts big-endian). Calls must
// pass whole blocks, except the last.
type ctrLE struct {
	block cipher.Block
	n     uint64 // bytes 8..15 of the counter stay 0: 2^64 blocks suffice
	ctr   [64 * aes.BlockSize]byte
	ks    [64 * aes.BlockSize]byte
}

func (c *ctrLE) xor(dst, src []byte) {
	for len(src) > 0 {
		k := min(len(src), len(c.ks))
		for i := 0; i < k; i += aes.BlockSize {
			binary.LittleEndian.PutUint64(c.ctr[i:], c.n)
			c.block.Encrypt(c.ks[i:i+aes.BlockSize], c.ctr[i:i+aes.BlockSize])
			c.n++
		}
		subtle.XORBytes(dst[:k], src[:k], c.ks[:k])
		dst, src = dst[k:], src[k:]
	}
}

// aesExtra is the 0x9901 extra field: AE-2, "AE", AES-256, and the real
// compression method.
func aesExtra(method uint16) []byte {
	x := make([]byte, 0, 11)
	x = binary.LittleEndian.AppendUint16(x, extraAES)
	x = binary.LittleEndian.AppendUint16(x, 7)
	x = binary.LittleEndian.AppendUint16(x, aesVendorAE2)
	x = append(x, 'A', 'E', aesStrength256)
	return binary.LittleEndian.AppendUint16(x, method)
}
