package inboundpost

import (
	"context"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"strconv"
	"time"

	"github.com/postline/postline/internal/event"
)

// Kinds of post.
const (
	KindForward = "forward" // forward(URL)
	KindNotify  = "notify"  // store(notify=URL)
)

// States of a post.
const (
	StatePending = "pending" // waiting for its record, its first try or a retry
	StatePosted  = "posted"  // answered 2xx
	StateFailed  = "failed"  // refused for good, or given up
	// StateDropped: its message's receipt was never recorded (the message
	// was refused after the post was queued), so nothing was posted.
	StateDropped = "dropped"
)

// Post is one queued post of a received message to a route's URL.
type Post struct {
	ID int64
	// Token identifies the post: the same for a client's retry of the same
	// message to the same recipient and action (see NewToken). Posted as
	// Mailgun's token, so that receivers can drop duplicates.
	Token               string
	AccountID, DomainID int64
	RouteID             string
	Kind                string // KindForward or KindNotify
	URL, Format         string
	Recipient, Sender   string
	// MessageID is that of the received log entry: the post's entry joins
	// its chain.
	MessageID string
	StoredID  string // a notification's stored message
	Raw       []byte // the message as received; nil when listed
	State     string
	Attempts  int // failed tries
	// LastStatus and LastError are the last try's answer (0 for none) and
	// failure in words.
	LastStatus    int
	LastError     string
	NextAttemptAt time.Time
	CreatedAt     time.Time
}

// Result is what a try came to, for Store.Retry and Store.Finish.
type Result struct {
	State    string // StatePending for Retry; a final state for Finish
	Attempts int
	Status   int
	Error    string
	Next     time.Time // Retry's next try
	At       time.Time
}

// Store keeps the outbox of posts.
type Store interface {
	// Enqueue stores posts as pending, each unless a post with its token
	// is stored already (then that one stands for it). When the messages
	// of the account's pending posts would then hold more than
	// maxPendingBytes, it stores none and returns receiving.ErrPostsFull
	// (posts are of one account).
	Enqueue(ctx context.Context, posts []Post, maxPendingBytes int64) error
	// DuePosts lists up to limit pending posts whose next try is due and
	// that no live lease holds, longest due first; Raw is not read.
	DuePosts(ctx context.Context, now time.Time, limit int) ([]Post, error)
	// LeasePost takes a pending post for owner until until when no live
	// lease holds it; false when another has it or it is done.
	LeasePost(ctx context.Context, id int64, owner string, now, until time.Time) (bool, error)
	// PostRaw returns a post's message.
	PostRaw(ctx context.Context, id int64) ([]byte, error)
	// RetryPost records a try that will be made again at r.Next and frees
	// the lease (owner's only).
	RetryPost(ctx context.Context, id int64, owner string, r Result) error
	// FinishPost ends owner's post in r.State, drops its message, frees
	// the lease and inserts entry (when not nil) into the log, in one
	// transaction.
	FinishPost(ctx context.Context, id int64, owner string, r Result, entry *event.Entry) error
	// PrunePosts deletes posts created before t, at most batch per
	// transaction, and returns how many.
	PrunePosts(ctx context.Context, before time.Time, batch int) (int64, error)
}

// NewToken is a post's token: the SHA-256, in hex, of the account, the
// recipient, the route, the action's place among the handed-on ones,
// the kind and URL, the stored copy (a notification's) and the digest of
// the message as the client sent it. A client's retry of a message that
// was refused after its posts were queued gives its forwards the same
// tokens (they join the first ones); its stored copy is new, so its
// notifications are new posts (the first ones, whose copy was never
// recorded, are dropped).
func NewToken(accountID int64, recipient, routeID string, index int, kind, url, storedID string, digest [32]byte) string {
	h := sha256.New()
	h.Write([]byte("postline inbound post\x00"))
	h.Write(binary.BigEndian.AppendUint64(nil, uint64(accountID)))
	for _, s := range []string{recipient, routeID, strconv.Itoa(index), kind, url, storedID} {
		h.Write([]byte(s))
		h.Write([]byte{0})
	}
	h.Write(digest[:])
	return hex.EncodeToString(h.Sum(nil))
}
