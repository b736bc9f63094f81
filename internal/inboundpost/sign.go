package inboundpost

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
)

// Sign is Mailgun's signature of a post: the hex HMAC-SHA256 of
// timestamp+token under the account's webhook signing key.
func Sign(key, timestamp, token string) string {
	m := hmac.New(sha256.New, []byte(key))
	m.Write([]byte(timestamp + token))
	return hex.EncodeToString(m.Sum(nil))
}
