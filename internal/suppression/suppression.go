// Package suppression keeps each domain's lists of recipients not to send
// to (bounce, unsubscribe) and of recipients always allowed (whitelist),
// and answers the check made before every send.
//
// The check: a recipient is suppressed when its address, or its domain, is
// on the domain's bounce or unsubscribe list, unless its address or its
// domain is whitelisted. Recipients are compared in normal form: the whole
// address lower-cased with the domain in A-label form, so that
// Bob@Bücher.example and bob@xn--bcher-kva.example are one recipient.
package suppression

import (
	"context"
	"time"
)

// Type is the list an entry is on.
type Type string

// The lists.
const (
	Unsubscribe Type = "unsubscribe"
	Bounce      Type = "bounce"
	Whitelist   Type = "whitelist"
)

// Valid reports whether t is one of the lists.
func (t Type) Valid() bool { return t == Unsubscribe || t == Bounce || t == Whitelist }

// RecipientType says whether an entry names an address or a whole domain.
type RecipientType string

// The recipient types.
const (
	Email  RecipientType = "email"
	Domain RecipientType = "domain"
)

// Entry is one suppression or whitelist entry.
type Entry struct {
	ID            int64
	DomainID      int64
	Type          Type
	RecipientType RecipientType
	Recipient     string // normal form
	Tags          *string
	Description   *string
	Source        *string // e.g. api, cli, bounce:5.1.1, unsubscribe:link, complaint
	CreatedAt     time.Time
}

// ListParams selects a page of one list.
type ListParams struct {
	DomainID int64
	Type     Type
	Search   string // case-insensitive substring of the recipient; empty = all
	Source   string // exact source ("complaint"); empty = any
	Limit    int
	Offset   int
}

// Store is the storage the service needs.
type Store interface {
	// Add inserts e unless an entry with the same (domain, type, recipient)
	// exists; it returns the stored entry and whether it was created.
	Add(ctx context.Context, e Entry) (Entry, bool, error)
	// List returns a page, newest first, and the total matching.
	List(ctx context.Context, p ListParams) ([]Entry, int, error)
	// Delete removes the entry with id on the domain; NotFound otherwise.
	Delete(ctx context.Context, domainID, id int64) error
	// DeleteAll removes the domain's entries of type t (and source, when
	// not empty) and returns how many.
	DeleteAll(ctx context.Context, domainID int64, t Type, source string) (int, error)
	// Matching returns every entry of the domain whose recipient is one of
	// keys (addresses and domains in normal form), in one query.
	Matching(ctx context.Context, domainID int64, keys []string) ([]Entry, error)
}
