// Package templates keeps a domain's stored message templates, with
// versions, and renders them (Handlebars syntax through
// github.com/mailgun/raymond, bounded in output and loop iterations).
package templates

import (
	"context"
	"fmt"
	"regexp"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/postline/postline/internal/apperr"
)

// Limits, named in the messages that enforce them.
const (
	MaxSubjectBytes    = 998
	MaxPartBytes       = 512 << 10 // html, text
	MaxPerDomain       = 500
	MaxVersions        = 100
	maxCompiledEntries = 2000
	// maxCompiledBytes bounds the compiled versions kept by the memory
	// they hold (Compiled.size): bounded in number alone, ten versions of
	// a 500 KB part of {{a}} kept 860 MB.
	maxCompiledBytes = 64 << 20
	// A Mailgun template's description and a version's comment are shown
	// in every list, which is read whole.
	MaxDescriptionBytes = 1024
	MaxCommentBytes     = 1024
)

var nameRE = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]{0,99}$`)

// Template is one version of a named template.
type Template struct {
	ID        int64
	DomainID  int64
	Name      string
	Version   int
	Subject   string
	HTML      string
	Text      string
	Strict    bool
	CreatedAt time.Time
	// Versions is how many versions the name has (lists only).
	Versions int
	// Tag names the version (Mailgun's t:version; Postline's versions are
	// tagged with their number), Comment describes it; Description is the
	// template's. Active marks the version sends use.
	Tag, Comment, Description string
	Active                    bool
}

// Store keeps templates. Versions are rows that never change.
type Store interface {
	// CreateTemplate stores version 1 of a new name (Conflict when the name
	// exists; Invalid past max templates for the domain).
	CreateTemplate(ctx context.Context, t Template, max int) (Template, error)
	// AddVersion stores the next version of an existing name (NotFound
	// when there is none; Invalid past max versions).
	AddVersion(ctx context.Context, t Template, max int) (Template, error)
	// Template returns a version; version 0 is the active one.
	Template(ctx context.Context, domainID int64, name string, version int) (Template, error)
	// ListTemplates returns the newest version of each name, by name,
	// without its content (HTML and Text empty).
	ListTemplates(ctx context.Context, domainID int64) ([]Template, error)
	DeleteTemplate(ctx context.Context, domainID int64, name string) error
	MailgunStore
}

// Service is the templates capability.
type Service struct {
	store Store
	now   func() time.Time

	mu            sync.Mutex
	compiled      map[int64]compiledEntry // by row id
	compiledBytes int                     // their Compiled.size together
}

// NewService returns a Service; now may be nil.
func NewService(st Store, now func() time.Time) *Service {
	if now == nil {
		now = time.Now
	}
	return &Service{store: st, now: now, compiled: map[int64]compiledEntry{}}
}

// compiledEntry is a version's compiled form and the content it has.
type compiledEntry struct {
	c                   *Compiled
	subject, html, text string
}

// Input is what a create or update gives.
type Input struct {
	Name                string
	Subject, HTML, Text string
	Strict              bool
}

func (in Input) check(withName bool) (*Compiled, error) {
	fe := apperr.FieldErrors{}
	if withName && !nameRE.MatchString(in.Name) {
		fe.Add("name", "The name must be 1 to 100 characters: letters, digits, '.', '_' and '-', starting with a letter or digit.")
	}
	if in.Subject == "" {
		fe.Add("subject", "The subject is required.")
	} else if len(in.Subject) > MaxSubjectBytes {
		fe.Add("subject", fmt.Sprintf("The subject must be at most %d bytes.", MaxSubjectBytes))
	}
	if in.Text == "" {
		fe.Add("text", "The text part is required (every message has one; html is optional).")
	}
	for field, v := range map[string]string{"html": in.HTML, "text": in.Text} {
		if len(v) > MaxPartBytes {
			fe.Add(field, fmt.Sprintf("The %s part must be at most %d bytes.", field, MaxPartBytes))
		}
	}
	storable(fe, map[string]string{"subject": in.Subject, "html": in.HTML, "text": in.Text})
	if err := fe.Err(); err != nil {
		return nil, err
	}
	c, err := Compile(in.Subject, in.HTML, in.Text, in.Strict)
	if c != nil {
		c.Name = in.Name
	}
	return c, err
}

// storable refuses, naming the field, text that is not valid UTF-8 or has
// a NUL character: PostgreSQL cannot keep either (a 500 before), and
// SQLite would keep what the other store refuses.
func storable(fe apperr.FieldErrors, fields map[string]string) {
	for field, v := range fields {
		if !utf8.ValidString(v) || strings.ContainsRune(v, 0) {
			fe.Add(field, "The "+field+" must be valid UTF-8 without NUL characters.")
		}
	}
}

// known is NotFound for a name, or a version's tag, that no template can
// have (both take nameRE's characters), before a store is asked:
// PostgreSQL refuses to compare text with a NUL or invalid UTF-8.
func known(name string, tag ...string) error {
	if !nameRE.MatchString(name) {
		return notFound(apperr.Errorf(apperr.NotFound, "no such name"), name)
	}
	for _, t := range tag {
		if !nameRE.MatchString(t) {
			return versionNotFound(apperr.Errorf(apperr.NotFound, "no such tag"), name, t)
		}
	}
	return nil
}

// Create stores version 1 of a new template.
func (s *Service) Create(ctx context.Context, domainID int64, in Input) (Template, error) {
	c, err := in.check(true)
	if err != nil {
		return Template{}, err
	}
	t, err := s.store.CreateTemplate(ctx, Template{DomainID: domainID, Name: in.Name, Version: 1, Subject: in.Subject,
		HTML: in.HTML, Text: in.Text, Strict: in.Strict, CreatedAt: s.now()}, MaxPerDomain)
	if apperr.CodeOf(err) == apperr.Conflict {
		return t, apperr.Errorf(apperr.Conflict, "A template named %s exists; PUT a new version of it instead.", in.Name)
	}
	if err == nil {
		s.keep(t, c)
	}
	return t, err
}

// Update stores a new version, which becomes the active one.
func (s *Service) Update(ctx context.Context, domainID int64, name string, in Input) (Template, error) {
	if err := known(name); err != nil {
		return Template{}, err
	}
	in.Name = name
	c, err := in.check(false)
	if err != nil {
		return Template{}, err
	}
	t, err := s.store.AddVersion(ctx, Template{DomainID: domainID, Name: name, Subject: in.Subject, HTML: in.HTML,
		Text: in.Text, Strict: in.Strict, CreatedAt: s.now(), Active: true}, MaxVersions)
	if err == nil {
		s.keep(t, c)
	}
	return t, notFound(err, name)
}

// Get returns a version (0: the active one).
func (s *Service) Get(ctx context.Context, domainID int64, name string, version int) (Template, error) {
	if err := known(name); err != nil {
		return Template{}, err
	}
	t, err := s.store.Template(ctx, domainID, name, version)
	if apperr.CodeOf(err) == apperr.NotFound && version != 0 {
		return t, apperr.Errorf(apperr.NotFound, "Template %s has no version %d.", name, version)
	}
	return t, notFound(err, name)
}

// List returns the active version of every template of the domain,
// without its content (HTML and Text empty): Get or Load has it.
func (s *Service) List(ctx context.Context, domainID int64) ([]Template, error) {
	return s.store.ListTemplates(ctx, domainID)
}

// Delete removes a template and all its versions.
func (s *Service) Delete(ctx context.Context, domainID int64, name string) error {
	if err := known(name); err != nil {
		return err
	}
	return notFound(s.store.DeleteTemplate(ctx, domainID, name), name)
}

// Load returns a version and its compiled form, compiled once per
// version's content.
func (s *Service) Load(ctx context.Context, domainID int64, name string, version int) (Template, *Compiled, error) {
	t, err := s.Get(ctx, domainID, name, version)
	if err != nil {
		return t, nil, err
	}
	return s.compiledFor(t)
}

// compiledFor returns t with its compiled form, from the cache when it
// holds t's content.
func (s *Service) compiledFor(t Template) (Template, *Compiled, error) {
	s.mu.Lock()
	e, ok := s.compiled[t.ID]
	s.mu.Unlock()
	// A Mailgun version's content can change in place: the entry serves
	// only the content it was compiled from.
	if ok && e.subject == t.Subject && e.html == t.HTML && e.text == t.Text {
		return t, e.c, nil
	}
	c, err := Compile(t.Subject, t.HTML, t.Text, t.Strict)
	if err != nil {
		return t, nil, err
	}
	s.keep(t, c)
	return t, c, nil
}

// keep caches a version's compiled form under its row id.
func (s *Service) keep(t Template, c *Compiled) {
	c.Name = fmt.Sprintf("%s (version %d)", t.Name, t.Version)
	s.mu.Lock()
	defer s.mu.Unlock()
	if c.size > maxCompiledBytes {
		return
	}
	if old, ok := s.compiled[t.ID]; ok {
		s.compiledBytes -= old.c.size
		delete(s.compiled, t.ID)
	}
	if len(s.compiled) >= maxCompiledEntries || s.compiledBytes+c.size > maxCompiledBytes {
		s.compiled, s.compiledBytes = map[int64]compiledEntry{}, 0
	}
	s.compiled[t.ID] = compiledEntry{c: c, subject: t.Subject, html: t.HTML, text: t.Text}
	s.compiledBytes += c.size
}

func notFound(err error, name string) error {
	if apperr.CodeOf(err) == apperr.NotFound {
		return apperr.Errorf(apperr.NotFound, "Template %s not found.", name)
	}
	return err
}
