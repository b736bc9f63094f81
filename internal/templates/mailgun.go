package templates

import (
	"context"
	"fmt"
	"html"
	"regexp"
	"slices"
	"strings"

	"github.com/postline/postline/internal/apperr"
)

// Mailgun's templates API over the same rows: a Mailgun template is a
// name with a description; its versions are Postline's versions, each
// with a tag, a comment and one active version. A Mailgun version's
// content (its "template") is the HTML part; the text part is derived
// from it, and the subject comes from the version's Subject header.

// MailgunStore is what the Mailgun API needs beyond Store.
type MailgunStore interface {
	// TemplateByTag returns the version tagged tag.
	TemplateByTag(ctx context.Context, domainID int64, name, tag string) (Template, error)
	// Versions returns every version of a name by number, without their
	// content (HTML and Text empty; NotFound for none).
	Versions(ctx context.Context, domainID int64, name string) ([]Template, error)
	// UpdateVersion changes the content, comment of the version tagged
	// t.Tag in place, and makes it active when t.Active.
	UpdateVersion(ctx context.Context, t Template) (Template, error)
	SetDescription(ctx context.Context, domainID int64, name, description string) error
	// DeleteVersion removes one version; the active one and a template's
	// only one are refused (Invalid).
	DeleteVersion(ctx context.Context, domainID int64, name, tag string) error
	DeleteAllTemplates(ctx context.Context, domainID int64) error
}

// MaxTagBytes bounds a version tag; tags take the characters of names.
const MaxTagBytes = 100

// MailgunVersion is a Mailgun version's content as given.
type MailgunVersion struct {
	Tag, Comment string
	// Template is the HTML (Handlebars); Subject is the version's Subject
	// header ("" for none: the send then gives it).
	Template, Subject string
	Active            bool
}

// noText is the text part of a version whose HTML has no text.
const noText = "This message has no plain-text version."

var (
	tagRE     = regexp.MustCompile(`(?is)<(script|style)\b.*?</(script|style)>|<[^>]*>`)
	blockRE   = regexp.MustCompile(`(?i)<(br|/p|/div|/h[1-6]|/li|/tr)\b[^>]*>`)
	spaceRE   = regexp.MustCompile(`[ \t\r\f\v]+`)
	newlineRE = regexp.MustCompile(`\n\s*\n\s*\n+`)
)

// TextFromHTML is the plain text of an HTML template: tags removed, line
// breaks where blocks end, entities decoded; Handlebars expressions stay.
func TextFromHTML(src string) string {
	s := blockRE.ReplaceAllString(src, "$0\n")
	s = tagRE.ReplaceAllString(s, "")
	s = html.UnescapeString(s)
	lines := strings.Split(s, "\n")
	for i, l := range lines {
		lines[i] = strings.TrimSpace(spaceRE.ReplaceAllString(l, " "))
	}
	s = strings.TrimSpace(newlineRE.ReplaceAllString(strings.Join(lines, "\n"), "\n\n"))
	if s == "" {
		return noText
	}
	return s
}

// mailgunInput checks a Mailgun version and gives its Postline parts.
func (v MailgunVersion) check(name string, withName bool) (Template, *Compiled, error) {
	fe := apperr.FieldErrors{}
	if withName && !nameRE.MatchString(name) {
		fe.Add("name", "The name must be 1 to 100 characters: letters, digits, '.', '_' and '-', starting with a letter or digit.")
	}
	if !nameRE.MatchString(v.Tag) {
		fe.Add("tag", "The tag must be 1 to 100 characters: letters, digits, '.', '_' and '-', starting with a letter or digit.")
	}
	if strings.TrimSpace(v.Template) == "" {
		fe.Add("template", "The template is required.")
	} else if len(v.Template) > MaxPartBytes {
		fe.Add("template", fmt.Sprintf("The template must be at most %d bytes.", MaxPartBytes))
	}
	if len(v.Subject) > MaxSubjectBytes {
		fe.Add("headers", fmt.Sprintf("The Subject header must be at most %d bytes.", MaxSubjectBytes))
	}
	if len(v.Comment) > MaxCommentBytes {
		fe.Add("comment", fmt.Sprintf("The comment must be at most %d bytes.", MaxCommentBytes))
	}
	storable(fe, map[string]string{"template": v.Template, "headers": v.Subject, "comment": v.Comment})
	if err := fe.Err(); err != nil {
		return Template{}, nil, err
	}
	t := Template{Name: name, Tag: v.Tag, Comment: v.Comment, Subject: v.Subject, HTML: v.Template,
		Text: TextFromHTML(v.Template), Active: v.Active}
	c, err := Compile(t.Subject, t.HTML, t.Text, false)
	if ae, ok := apperr.As(err); ok && len(ae.Fields) > 0 {
		return t, nil, apperr.Field("template", mailgunFieldMessage(ae))
	}
	return t, c, err
}

func checkDescription(d string) error {
	fe := apperr.FieldErrors{}
	if len(d) > MaxDescriptionBytes {
		fe.Add("description", fmt.Sprintf("The description must be at most %d bytes.", MaxDescriptionBytes))
	}
	storable(fe, map[string]string{"description": d})
	return fe.Err()
}

func mailgunFieldMessage(e *apperr.Error) string {
	var out []string
	for _, msgs := range e.Fields {
		out = append(out, msgs...)
	}
	return strings.Join(out, " ")
}

// CreateMailgun stores a new template with its first version (active).
func (s *Service) CreateMailgun(ctx context.Context, domainID int64, name, description string, v MailgunVersion) (Template, error) {
	if err := checkDescription(description); err != nil {
		return Template{}, err
	}
	t, c, err := v.check(name, true)
	if err != nil {
		return t, err
	}
	t.DomainID, t.Description, t.CreatedAt = domainID, description, s.now()
	t, err = s.store.CreateTemplate(ctx, t, MaxPerDomain)
	if apperr.CodeOf(err) == apperr.Conflict {
		return t, apperr.Errorf(apperr.Conflict, "template %s already exists", name)
	}
	if err == nil {
		s.keep(t, c)
	}
	return t, err
}

// AddMailgunVersion stores a new version of a template.
func (s *Service) AddMailgunVersion(ctx context.Context, domainID int64, name string, v MailgunVersion) (Template, error) {
	if err := known(name); err != nil {
		return Template{}, err
	}
	t, c, err := v.check(name, false)
	if err != nil {
		return t, err
	}
	t.DomainID, t.CreatedAt = domainID, s.now()
	t, err = s.store.AddVersion(ctx, t, MaxVersions)
	if err == nil {
		s.keep(t, c)
	}
	return t, notFound(err, name)
}

// MailgunUpdate is a change to a version; nil fields stay as they are.
type MailgunUpdate struct {
	Template, Comment, Subject *string
	Active                     bool
}

// UpdateMailgunVersion changes a version in place.
func (s *Service) UpdateMailgunVersion(ctx context.Context, domainID int64, name, tag string, u MailgunUpdate) (Template, error) {
	cur, err := s.Version(ctx, domainID, name, tag)
	if err != nil {
		return cur, err
	}
	v := MailgunVersion{Tag: tag, Comment: cur.Comment, Template: cur.HTML, Subject: cur.Subject, Active: u.Active}
	for dst, src := range map[*string]*string{&v.Template: u.Template, &v.Comment: u.Comment, &v.Subject: u.Subject} {
		if src != nil {
			*dst = *src
		}
	}
	t, _, err := v.check(name, false)
	if err != nil {
		return t, err
	}
	t.DomainID = domainID
	t, err = s.store.UpdateVersion(ctx, t)
	return t, versionNotFound(err, name, tag)
}

// Version returns the version of a template tagged tag.
func (s *Service) Version(ctx context.Context, domainID int64, name, tag string) (Template, error) {
	if err := known(name, tag); err != nil {
		return Template{}, err
	}
	t, err := s.store.TemplateByTag(ctx, domainID, name, tag)
	return t, versionNotFound(err, name, tag)
}

// LoadTag is Load of the version tagged tag.
func (s *Service) LoadTag(ctx context.Context, domainID int64, name, tag string) (Template, *Compiled, error) {
	t, err := s.Version(ctx, domainID, name, tag)
	if err != nil {
		return t, nil, err
	}
	return s.compiledFor(t)
}

// Versions returns every version of a template, by number, without
// their content (HTML and Text empty): Version has it.
func (s *Service) Versions(ctx context.Context, domainID int64, name string) ([]Template, error) {
	if err := known(name); err != nil {
		return nil, err
	}
	list, err := s.store.Versions(ctx, domainID, name)
	return list, notFound(err, name)
}

// SetDescription changes a template's description.
func (s *Service) SetDescription(ctx context.Context, domainID int64, name, description string) error {
	if err := known(name); err != nil {
		return err
	}
	if err := checkDescription(description); err != nil {
		return err
	}
	return notFound(s.store.SetDescription(ctx, domainID, name, description), name)
}

// DeleteVersion removes a version that is not the active one.
func (s *Service) DeleteVersion(ctx context.Context, domainID int64, name, tag string) error {
	if err := known(name, tag); err != nil {
		return err
	}
	return versionNotFound(s.store.DeleteVersion(ctx, domainID, name, tag), name, tag)
}

// DeleteAll removes every template of a domain.
func (s *Service) DeleteAll(ctx context.Context, domainID int64) error {
	return s.store.DeleteAllTemplates(ctx, domainID)
}

func versionNotFound(err error, name, tag string) error {
	if apperr.CodeOf(err) == apperr.NotFound {
		return apperr.Errorf(apperr.NotFound, "template %s has no version %s", name, tag)
	}
	return err
}

// WithSubject is c with subject as its subject template (Mailgun's send
// gives the subject beside a stored template).
func (c *Compiled) WithSubject(subject string) (*Compiled, error) {
	s, err := Compile(subject, "", "", c.Strict)
	if err != nil {
		return nil, err
	}
	out := *c
	out.subject = s.subject
	out.statements += s.statements
	out.size += s.size
	out.paths = append(slices.Clone(c.paths), s.paths...)
	return &out, nil
}
