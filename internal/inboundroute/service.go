package inboundroute

import (
	"cmp"
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"slices"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/postline/postline/internal/apperr"
)

// Definition is a route as stored and shown: an account's, with its
// expression and actions as written.
type Definition struct {
	// ID is 24 lower-case hex digits, as Mailgun's route ids are.
	ID          string
	AccountID   int64
	Priority    int
	Description string
	Expression  string
	Actions     []string
	// Format is how its URL forwards and notifications post (Formats).
	Format    string
	CreatedAt time.Time
}

// Compile compiles the definition, carrying its ID and priority.
func (d Definition) Compile() (*Route, error) {
	r, err := Compile(d.Expression, d.Actions)
	if err != nil {
		return nil, err
	}
	r.ID, r.Priority, r.Format = d.ID, d.Priority, cmp.Or(d.Format, FormatMailgun)
	return r, nil
}

// The formats of a route's posts (Definition.Format): what its
// forward(URL) actions and store notifications send.
const (
	FormatMailgun = "mailgun" // Mailgun's form fields (the default)
	FormatJSON    = "json"    // Postmark's inbound JSON
	FormatRaw     = "raw"     // the message itself, message/rfc822
)

// Formats are the valid formats, the default first.
var Formats = []string{FormatMailgun, FormatJSON, FormatRaw}

// Store keeps routes.
type Store interface {
	// CreateRoute stores a new route; Unprocessable when its account has
	// max routes already.
	CreateRoute(ctx context.Context, d Definition, max int) (Definition, error)
	// Route returns a route by id, whichever account's (NotFound when
	// there is none).
	Route(ctx context.Context, id string) (Definition, error)
	// ListRoutes returns a page of an account's routes in evaluation
	// order (priority, then creation) and how many the account has.
	ListRoutes(ctx context.Context, accountID int64, offset, limit int) ([]Definition, int, error)
	// UpdateRoute replaces the priority, description, expression and
	// actions of an account's route (NotFound for another account's).
	UpdateRoute(ctx context.Context, d Definition) error
	// DeleteRoute removes an account's route (NotFound for another
	// account's).
	DeleteRoute(ctx context.Context, accountID int64, id string) error
}

// Change is what a create or update gives; nil fields are not given
// (update keeps them; create requires Expression and Actions).
type Change struct {
	Priority    *int
	Description *string
	Expression  *string
	Actions     []string
	Format      *string
}

// Service keeps the accounts' routes: checked by Compile before they are
// stored, so that every stored route compiles.
type Service struct {
	store Store
	now   func() time.Time
}

// NewService returns a Service; now may be nil.
func NewService(st Store, now func() time.Time) *Service {
	if now == nil {
		now = time.Now
	}
	return &Service{store: st, now: now}
}

// errNotFound is the answer for a route that is not the caller's, unknown
// or not an id at all: never told apart.
func errNotFound() error { return apperr.Errorf(apperr.NotFound, "route not found") }

// Create stores a new route of the account.
func (s *Service) Create(ctx context.Context, accountID int64, c Change) (Definition, error) {
	fe := apperr.FieldErrors{}
	if c.Expression == nil {
		fe.Add("expression", "The expression is required.")
	}
	if c.Actions == nil {
		fe.Add("actions", "At least one action is required.")
	}
	if err := fe.Err(); err != nil {
		return Definition{}, err
	}
	d := Definition{ID: newID(), AccountID: accountID, CreatedAt: s.now().UTC().Truncate(time.Millisecond)}
	apply(&d, c)
	if err := check(d); err != nil {
		return Definition{}, err
	}
	return s.store.CreateRoute(ctx, d, MaxPerAccount)
}

// Get returns the account's route; another account's is NotFound.
func (s *Service) Get(ctx context.Context, accountID int64, id string) (Definition, error) {
	d, err := s.ByID(ctx, id)
	if err != nil {
		return d, err
	}
	if d.AccountID != accountID {
		return Definition{}, errNotFound()
	}
	return d, nil
}

// ByID returns any account's route, for the operator.
func (s *Service) ByID(ctx context.Context, id string) (Definition, error) {
	if !ValidID(id) {
		return Definition{}, errNotFound()
	}
	return s.store.Route(ctx, id)
}

// List returns a page of the account's routes in evaluation order and
// how many it has.
func (s *Service) List(ctx context.Context, accountID int64, offset, limit int) ([]Definition, int, error) {
	return s.store.ListRoutes(ctx, accountID, offset, limit)
}

// Update changes the given fields of the account's route.
func (s *Service) Update(ctx context.Context, accountID int64, id string, c Change) (Definition, error) {
	d, err := s.Get(ctx, accountID, id)
	if err != nil {
		return d, err
	}
	apply(&d, c)
	if err := check(d); err != nil {
		return Definition{}, err
	}
	return d, s.store.UpdateRoute(ctx, d)
}

// Delete removes the account's route.
func (s *Service) Delete(ctx context.Context, accountID int64, id string) error {
	if !ValidID(id) {
		return errNotFound()
	}
	return s.store.DeleteRoute(ctx, accountID, id)
}

// Routes are all the account's routes compiled, in evaluation order, for
// the receiving side to Evaluate (only ever for recipients at the
// account's own inbound domains). A stored route that no longer compiles
// (a limit lowered since it was stored) is left out and named in broken
// with its error, for the caller to log.
func (s *Service) Routes(ctx context.Context, accountID int64) (routes []*Route, broken map[string]error, err error) {
	defs, _, err := s.store.ListRoutes(ctx, accountID, 0, MaxPerAccount)
	if err != nil {
		return nil, nil, err
	}
	for _, d := range defs {
		r, err := d.Compile()
		if err != nil {
			if broken == nil {
				broken = map[string]error{}
			}
			broken[d.ID] = err
			continue
		}
		routes = append(routes, r)
	}
	Sort(routes)
	return routes, broken, nil
}

func apply(d *Definition, c Change) {
	if c.Priority != nil {
		d.Priority = *c.Priority
	}
	if c.Description != nil {
		d.Description = *c.Description
	}
	if c.Expression != nil {
		d.Expression = *c.Expression
	}
	if c.Actions != nil {
		d.Actions = c.Actions
	}
	if c.Format != nil {
		d.Format = *c.Format
	}
	d.Format = cmp.Or(d.Format, FormatMailgun)
}

// check refuses what may not be stored, naming every field at fault.
func check(d Definition) error {
	fe := apperr.FieldErrors{}
	if d.Priority < 0 || d.Priority > MaxPriority {
		fe.Add("priority", fmt.Sprintf("The priority must be an integer from 0 to %d (lower is evaluated first).", MaxPriority))
	}
	switch {
	case len(d.Description) > MaxDescriptionBytes:
		fe.Add("description", fmt.Sprintf("The description may be at most %d bytes.", MaxDescriptionBytes))
	case !utf8.ValidString(d.Description) || strings.ContainsFunc(d.Description, func(r rune) bool { return r < 0x20 || r == 0x7f }):
		fe.Add("description", "The description must be UTF-8 text without control characters.")
	}
	if !slices.Contains(Formats, d.Format) {
		fe.Add("format", fmt.Sprintf("The format must be one of %s.", strings.Join(Formats, ", ")))
	}
	if len(d.Actions) == 0 {
		fe.Add("actions", "At least one action is required: forward(...), store(...) or stop().")
	}
	if _, err := Compile(d.Expression, d.Actions); err != nil {
		e, ok := apperr.As(err)
		if !ok {
			return err
		}
		for f, problems := range e.Fields {
			for _, p := range problems {
				fe.Add(f, p)
			}
		}
	}
	return fe.Err()
}

// ValidID reports a route id's form: 24 lower-case hex digits.
func ValidID(id string) bool {
	if len(id) != 24 {
		return false
	}
	for i := 0; i < len(id); i++ {
		if !((id[i] >= '0' && id[i] <= '9') || (id[i] >= 'a' && id[i] <= 'f')) {
			return false
		}
	}
	return true
}

func newID() string {
	b := make([]byte, 12)
	rand.Read(b)
	return hex.EncodeToString(b)
}
