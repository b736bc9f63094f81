package suppression

import (
	"context"
	"encoding/csv"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/postline/postline/internal/apperr"
)

// Service is the suppression capability.
type Service struct {
	store Store
	now   func() time.Time
	index *KeyIndex // nil: Screen is CheckMany
}

// NewService returns a Service; now may be nil for time.Now.
func NewService(store Store, now func() time.Time) *Service {
	if now == nil {
		now = time.Now
	}
	return &Service{store: store, now: now}
}

// UseIndex makes Screen answer from x when x proves no recipient matches.
func (s *Service) UseIndex(x *KeyIndex) { s.index = x }

// MaxDescription bounds a whitelist entry's description.
const MaxDescription = 500

// AddParams describes an entry to add.
type AddParams struct {
	DomainID      int64
	Type          Type
	Recipient     string
	RecipientType RecipientType // optional: inferred; must agree when given
	Description   string
	Tags          string
	Source        string
}

// Add adds an entry; adding one that exists returns the existing entry
// with created false.
func (s *Service) Add(ctx context.Context, p AddParams) (Entry, bool, error) {
	fe := apperr.FieldErrors{}
	if !p.Type.Valid() {
		fe.Add("type", "The type must be one of unsubscribe, bounce, whitelist.")
	}
	var norm string
	var rt RecipientType
	if strings.TrimSpace(p.Recipient) == "" {
		fe.Add("recipient", "The recipient field is required.")
	} else {
		var err error
		if norm, rt, err = Normalize(p.Recipient); err != nil {
			fe.Add("recipient", "The recipient must be a valid email address or domain name.")
		}
	}
	switch {
	case p.RecipientType == "":
	case p.RecipientType != Email && p.RecipientType != Domain:
		fe.Add("recipient_type", "The recipient_type must be email or domain.")
	case norm != "" && p.RecipientType != rt:
		fe.Add("recipient_type", fmt.Sprintf("The recipient_type is %s but the recipient is a %s.", p.RecipientType, describe(rt)))
	}
	if utf8.RuneCountInString(p.Description) > MaxDescription {
		fe.Add("description", fmt.Sprintf("The description must not be greater than %d characters.", MaxDescription))
	} else if strings.ContainsRune(p.Description, 0) || !utf8.ValidString(p.Description) {
		fe.Add("description", "The description must be valid UTF-8 without NUL characters.")
	}
	if err := fe.Err(); err != nil {
		return Entry{}, false, err
	}
	return s.store.Add(ctx, Entry{DomainID: p.DomainID, Type: p.Type, RecipientType: rt, Recipient: norm,
		Description: opt(p.Description), Tags: opt(p.Tags), Source: opt(p.Source), CreatedAt: s.now().UTC()})
}

func describe(rt RecipientType) string {
	if rt == Email {
		return "email address"
	}
	return "domain name"
}

func opt(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}

// AddBounce records a hard bounce of recipient (idempotent).
func (s *Service) AddBounce(ctx context.Context, domainID int64, recipient, source string) (Entry, error) {
	e, _, err := s.Add(ctx, AddParams{DomainID: domainID, Type: Bounce, Recipient: recipient, Source: source})
	return e, err
}

// AddUnsubscribe records an unsubscribe of recipient (idempotent).
func (s *Service) AddUnsubscribe(ctx context.Context, domainID int64, recipient, source string) (Entry, error) {
	e, _, err := s.Add(ctx, AddParams{DomainID: domainID, Type: Unsubscribe, Recipient: recipient, Source: source})
	return e, err
}

// Page is one page of a list.
type Page struct {
	Entries  []Entry
	Total    int
	PerPage  int
	Page     int
	LastPage int
	From, To *int // 1-based positions of the first and last entry; nil when empty
}

// Paging bounds, from the interface document.
const (
	DefaultPerPage = 10
	MinPerPage     = 10
	MaxPerPage     = 100
)

// List returns one page of a list, newest first. page and perPage must be
// already validated (page >= 1, perPage within bounds).
func (s *Service) List(ctx context.Context, domainID int64, t Type, search string, page, perPage int) (Page, error) {
	entries, total, err := s.store.List(ctx, ListParams{DomainID: domainID, Type: t, Search: strings.ToLower(strings.TrimSpace(search)),
		Limit: perPage, Offset: (page - 1) * perPage})
	if err != nil {
		return Page{}, err
	}
	p := Page{Entries: entries, Total: total, PerPage: perPage, Page: page, LastPage: max(1, (total+perPage-1)/perPage)}
	if len(entries) > 0 {
		from, to := (page-1)*perPage+1, (page-1)*perPage+len(entries)
		p.From, p.To = &from, &to
	}
	return p, nil
}

// Remove deletes an entry of the domain by id.
func (s *Service) Remove(ctx context.Context, domainID, id int64) error {
	err := s.store.Delete(ctx, domainID, id)
	if apperr.CodeOf(err) == apperr.NotFound {
		return apperr.Errorf(apperr.NotFound, "Suppression %d not found", id)
	}
	return err
}

// MaxRemoveMany bounds the entries one RemoveMany removes: a page's worth
// (MaxPerPage), which is what a console page lets one select.
const MaxRemoveMany = MaxPerPage

// RemoveMany deletes the domain's entries with these ids and returns how
// many it removed; an id that is not the domain's (or no longer there) is
// skipped. More than MaxRemoveMany ids is an Invalid error naming "id".
func (s *Service) RemoveMany(ctx context.Context, domainID int64, ids []int64) (int, error) {
	if len(ids) > MaxRemoveMany {
		return 0, apperr.Field("id", fmt.Sprintf("Select at most %d entries at once.", MaxRemoveMany))
	}
	n := 0
	for _, id := range ids {
		switch err := s.store.Delete(ctx, domainID, id); apperr.CodeOf(err) {
		case "":
			n++
		case apperr.NotFound:
		default:
			return n, err
		}
	}
	return n, nil
}

// Find returns the domain's entry of type t for recipient (normalised as
// Add does); NotFound when there is none.
func (s *Service) Find(ctx context.Context, domainID int64, t Type, recipient string) (Entry, error) {
	norm, _, err := Normalize(recipient)
	if err != nil {
		return Entry{}, apperr.Errorf(apperr.NotFound, "%s not found", recipient)
	}
	all, err := s.store.Matching(ctx, domainID, []string{norm})
	if err != nil {
		return Entry{}, err
	}
	for _, e := range all {
		if e.Type == t && e.Recipient == norm {
			return e, nil
		}
	}
	return Entry{}, apperr.Errorf(apperr.NotFound, "%s not found", recipient)
}

// ListSource is List restricted to one source ("complaint").
func (s *Service) ListSource(ctx context.Context, domainID int64, t Type, source string, page, perPage int) (Page, error) {
	entries, total, err := s.store.List(ctx, ListParams{DomainID: domainID, Type: t, Source: source, Limit: perPage, Offset: (page - 1) * perPage})
	if err != nil {
		return Page{}, err
	}
	return Page{Entries: entries, Total: total, PerPage: perPage, Page: page, LastPage: max(1, (total+perPage-1)/perPage)}, nil
}

// RemoveAll deletes the domain's entries of type t (of source, when not
// empty) and returns how many.
func (s *Service) RemoveAll(ctx context.Context, domainID int64, t Type, source string) (int, error) {
	return s.store.DeleteAll(ctx, domainID, t, source)
}

// ImportResult counts what Import did.
type ImportResult struct{ Added, Existing int }

// Import reads CSV rows "recipient,type" (a header row is allowed; type
// defaults to bounce) and adds each. It stops at the first bad row and
// names its line; rows before it stay added.
func (s *Service) Import(ctx context.Context, domainID int64, r io.Reader, source string) (ImportResult, error) {
	var res ImportResult
	cr := csv.NewReader(r)
	cr.FieldsPerRecord = -1
	cr.TrimLeadingSpace = true
	for line := 1; ; line++ {
		rec, err := cr.Read()
		if errors.Is(err, io.EOF) {
			return res, nil
		}
		if err != nil {
			return res, fmt.Errorf("line %d: %w", line, err)
		}
		if len(rec) == 0 || strings.TrimSpace(rec[0]) == "" || (line == 1 && strings.EqualFold(strings.TrimSpace(rec[0]), "recipient")) {
			continue
		}
		t := Bounce
		if len(rec) > 1 && strings.TrimSpace(rec[1]) != "" {
			t = Type(strings.ToLower(strings.TrimSpace(rec[1])))
		}
		_, created, err := s.Add(ctx, AddParams{DomainID: domainID, Type: t, Recipient: rec[0], Source: source})
		if err != nil {
			return res, fmt.Errorf("line %d: %w", line, err)
		}
		if created {
			res.Added++
		} else {
			res.Existing++
		}
	}
}
