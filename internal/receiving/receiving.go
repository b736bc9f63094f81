package receiving

import (
	"cmp"
	"context"
	"errors"
	"io"
	"log/slog"
	"net/netip"
	"time"

	"github.com/postline/postline/internal/domain"
	"github.com/postline/postline/internal/event"
	"github.com/postline/postline/internal/inboundroute"
	"github.com/postline/postline/internal/mailauth"
)

// Errors of Receive the door answers with an SMTP reply (its code table).
var (
	// ErrNoRoute: no route takes any recipient of the message.
	ErrNoRoute = errors.New("receiving: no route takes the recipient")
	// ErrRoutesChanged: some recipients are taken and some no longer are
	// (the routes changed since RCPT); nothing was recorded.
	ErrRoutesChanged = errors.New("receiving: the routes changed since RCPT")
	// ErrStoreFull: a store() would take the account past its bound of
	// stored messages; nothing was recorded, and retention frees room.
	ErrStoreFull = errors.New("receiving: the account's stored messages hold their most")
	// ErrPostsFull: the posts a Forwarder would queue would take the
	// account past its bound of messages waiting to be posted to its
	// routes' URLs; nothing was recorded, and posts that end free room.
	ErrPostsFull = errors.New("receiving: the account's posts waiting to be sent hold their most")
	// ErrTooCostly: matching the routes against a recipient and the
	// message's header costs more than inboundroute.MaxMatchCost; nothing
	// was recorded, and the same message would cost as much again.
	ErrTooCostly = errors.New("receiving: the routes cost too much to match against the message")
	// ErrTooManyActions: the routes would hand on more forwards and
	// notifications for the message than Config.ActionsPerMessage; nothing
	// was recorded, and the same message would ask as many again.
	ErrTooManyActions = errors.New("receiving: the routes hand on too many forwards for one message")
)

// Message is a message kept by store(), for one recipient.
type Message struct {
	ID        string // 32 hex digits
	AccountID int64
	DomainID  int64
	Recipient string
	// Sender is the envelope sender (MAIL FROM), "" for the null sender.
	Sender string
	// From and Subject are the message's fields, RFC 2047-decoded.
	From, Subject string
	MessageID     string // without the angle brackets
	// Routes are the ids of the routes that took the message.
	Routes     []string
	Auth       mailauth.Results
	Size       int64
	Raw        []byte // as stored (our fields on top); nil in lists
	ReceivedAt time.Time
}

// Filter selects a domain's stored messages, newest first.
type Filter struct {
	DomainID int64
	// Recipient and Sender are exact and case-insensitive; Subject a
	// case-insensitive substring; Start and End bound ReceivedAt
	// (inclusive). Zero values select everything.
	Recipient, Sender, Subject string
	Start, End                 time.Time
	// Since leaves out what retention has to delete (set by the Service).
	Since         time.Time
	Offset, Limit int
}

// Store keeps stored messages and records received mail.
type Store interface {
	// Record stores msgs and inserts entries (the received log entries) in
	// one transaction; ErrStoreFull, with nothing recorded, when an
	// account's stored bytes would pass maxBytesPerAccount.
	Record(ctx context.Context, msgs []Message, entries []event.Entry, maxBytesPerAccount int64) error
	// ListMessages returns a page of f's messages (Raw nil), newest first,
	// and how many match.
	ListMessages(ctx context.Context, f Filter) ([]Message, int, error)
	// Message returns a domain's message with its raw bytes (NotFound for
	// another domain's or a missing one).
	Message(ctx context.Context, domainID int64, id string) (Message, error)
	// PruneMessages deletes messages received before t, at most batch per
	// transaction, and returns how many.
	PruneMessages(ctx context.Context, before time.Time, batch int) (int64, error)
}

// Domains finds the domain that receives for a name.
type Domains interface {
	Receiving(ctx context.Context, name string) (domain.Domain, error)
}

// Routes lists an account's routes in evaluation order.
type Routes interface {
	List(ctx context.Context, accountID int64, offset, limit int) ([]inboundroute.Definition, int, error)
}

// Config configures the Service; zero values take the defaults.
type Config struct {
	// AuthservID names this server in the Authentication-Results and
	// Received fields it adds (default "localhost").
	AuthservID string
	// Retention is how long stored messages are kept (default 72 h).
	Retention time.Duration
	// StoreBytesPerAccount bounds an account's stored messages (default 1 GiB).
	StoreBytesPerAccount int64
	// ActionsPerMessage bounds the forwards (each destination) and store
	// notifications one message's routes hand on, over all its recipients
	// (default 500): past it ErrTooManyActions.
	ActionsPerMessage int
	Logger            *slog.Logger
	Now               func() time.Time
}

// Deps are the services the Service uses.
type Deps struct {
	Domains  Domains
	Routes   Routes
	Store    Store
	Resolver mailauth.Resolver
	// Events is woken for the domains whose log got entries (may be nil).
	Events *event.Service
	// Forwarder carries out forwards and notifications; nil: Unsupported.
	Forwarder Forwarder
}

// Service receives mail for inbound domains.
type Service struct {
	cfg    Config
	deps   Deps
	routes *routeCache
}

// NewService returns a Service.
func NewService(cfg Config, deps Deps) *Service {
	cfg.AuthservID = cmp.Or(cfg.AuthservID, "localhost")
	cfg.Retention = cmp.Or(cfg.Retention, 72*time.Hour)
	cfg.StoreBytesPerAccount = cmp.Or(cfg.StoreBytesPerAccount, 1<<30)
	cfg.ActionsPerMessage = cmp.Or(cfg.ActionsPerMessage, 500)
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if deps.Forwarder == nil {
		deps.Forwarder = Unsupported{}
	}
	return &Service{cfg: cfg, deps: deps, routes: newRouteCache()}
}

// Retention is how long stored messages are kept.
func (s *Service) Retention() time.Duration { return s.cfg.Retention }

// Envelope is one SMTP transaction's account of a message.
type Envelope struct {
	RemoteIP netip.Addr
	Helo     string
	TLS      bool // the session was under STARTTLS
	// MailFrom is the envelope sender, "" for the null sender.
	MailFrom   string
	Recipients []Recipient
}

// Recipient is an address Recipient accepted, with its domain.
type Recipient struct {
	Address string
	Domain  domain.Domain
}
