package webhook

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"strconv"
	"strings"
	"time"
)

// The Standard Webhooks headers (https://www.standardwebhooks.com), sent
// with every post besides SignatureHeader, so receivers can verify posts
// with the specification's published libraries.
const (
	StandardID        = "webhook-id"
	StandardTimestamp = "webhook-timestamp"
	StandardSignature = "webhook-signature"
)

// StandardSign returns the webhook-signature value: "v1," and the base64
// HMAC-SHA256 of "id.timestamp.body" under the secret's key, which the
// specification defines as the base64 decoding of what follows "whsec_".
// (Postline's secrets are hex after the prefix; hex digits are base64
// characters, and the libraries decode them the same way.)
func StandardSign(secret, id string, t time.Time, body []byte) string {
	key, err := base64.StdEncoding.DecodeString(strings.TrimPrefix(secret, "whsec_"))
	if err != nil {
		key = []byte(secret) // not a specification secret: still a MAC, libraries will refuse it
	}
	mac := hmac.New(sha256.New, key)
	mac.Write([]byte(id + "." + strconv.FormatInt(t.Unix(), 10) + "."))
	mac.Write(body)
	return "v1," + base64.StdEncoding.EncodeToString(mac.Sum(nil))
}
