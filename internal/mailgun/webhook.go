package mailgun

import (
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"slices"
	"strconv"
	"time"

	"github.com/postline/postline/internal/event"
)

// WebhookIDs are Mailgun's webhook ids (its "webhook names"), one per
// kind of event a domain's webhook URLs receive.
var WebhookIDs = []string{"accepted", "delivered", "permanent_fail", "temporary_fail", "opened", "clicked",
	"unsubscribed", "complained"}

// ValidWebhookID reports whether id is one of WebhookIDs.
func ValidWebhookID(id string) bool { return slices.Contains(WebhookIDs, id) }

// MaxWebhookURLs is how many URLs one webhook id may have, as Mailgun.
const MaxWebhookURLs = 3

// WebhookID is the webhook id that receives en ("" when none does): its
// event name, with failures split by severity.
func WebhookID(en event.Entry) string {
	name, severity := EventName(en)
	if name == "failed" {
		return severity + "_fail"
	}
	return name
}

// Signature is the signature object of a webhook post.
type Signature struct {
	Timestamp string `json:"timestamp"`
	Token     string `json:"token"`
	Signature string `json:"signature"`
}

// Sign signs a post made at t with the account's signing key as Mailgun
// documents: a fresh random token, and the hex HMAC-SHA256 under key of
// the timestamp (Unix seconds, decimal) followed by the token.
func Sign(key string, t time.Time) Signature {
	b := make([]byte, 25)
	rand.Read(b) //nolint:errcheck // crypto/rand does not fail
	s := Signature{Timestamp: strconv.FormatInt(t.Unix(), 10), Token: hex.EncodeToString(b)}
	m := hmac.New(sha256.New, []byte(key))
	m.Write([]byte(s.Timestamp + s.Token))
	s.Signature = hex.EncodeToString(m.Sum(nil))
	return s
}

// NewSigningKey returns a new webhook signing key: 32 random bytes, hex.
func NewSigningKey() string {
	b := make([]byte, 32)
	rand.Read(b) //nolint:errcheck // crypto/rand does not fail
	return hex.EncodeToString(b)
}
