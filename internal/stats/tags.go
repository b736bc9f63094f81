package stats

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/postline/postline/internal/apperr"
	"github.com/postline/postline/internal/event"
)

// Tag limits. Tags are Mailgun's o:tag values (and the tags of Postline's
// own sends), case-insensitive: kept folded.
const (
	// MaxTagLength is Mailgun's: a longer tag is not tracked.
	MaxTagLength = 128
	// MaxTagsPerDomain bounds the tags tracked per domain: once a domain
	// has this many, new tags are not tracked (their messages still count
	// in the domain's stats). Tags unused for the log's retention are
	// forgotten with their counts, and DELETE frees one. The check is in
	// the inserting statement, so on PostgreSQL transactions adding new
	// tags at once may pass it by a few.
	MaxTagsPerDomain = 4000
	// MaxDescription bounds a tag's description.
	MaxDescription = 1024
	// LastSeenStep is how stale a tag's last use may be before a new use
	// rewrites it: a busy tag's row is written once a minute, not by
	// every recording transaction.
	LastSeenStep = time.Minute
)

// Tag is one of a domain's tags.
type Tag struct {
	Name        string
	Description string
	FirstSeen   time.Time
	LastSeen    time.Time
}

// Direction is which page of tags, relative to TagPage.Pivot.
type Direction int

// The pages: the first, those after the pivot, those before it, the last.
const (
	First Direction = iota
	Next
	Prev
	Last
)

// TagPage selects a page of tags in name order.
type TagPage struct {
	Dir    Direction
	Pivot  string // Next: names after it; Prev: names before it
	Prefix string // only names starting with it ("" all)
	Limit  int
}

// TagsOf returns the tags an entry's tags field names that are tracked:
// folded, trimmed, at most MaxTagLength characters, each once.
func TagsOf(raw string) []string {
	if raw == "" {
		return nil
	}
	var out []string
	for _, t := range strings.Split(raw, ",") {
		t = event.Fold(strings.TrimSpace(t))
		if t == "" || utf8.RuneCountInString(t) > MaxTagLength || slices.Contains(out, t) {
			continue
		}
		out = append(out, t)
	}
	return out
}

// TagName checks a tag named in a request and returns it folded.
func TagName(name string) (string, error) {
	name = event.Fold(strings.TrimSpace(name))
	if name == "" {
		return "", apperr.Field("tag", "The tag is required.")
	}
	if utf8.RuneCountInString(name) > MaxTagLength {
		return "", apperr.Field("tag", fmt.Sprintf("A tag has at most %d characters.", MaxTagLength))
	}
	return name, nil
}

// tagNotFound words a tag the domain does not have as Mailgun does.
func tagNotFound(err error) error {
	if apperr.CodeOf(err) == apperr.NotFound {
		return apperr.Errorf(apperr.NotFound, "Tag not found")
	}
	return err
}

// Tags returns a page of the domain's tags.
func (s *Service) Tags(ctx context.Context, domainID int64, p TagPage) ([]Tag, error) {
	p.Prefix = event.Fold(p.Prefix)
	p.Pivot = event.Fold(p.Pivot)
	return s.store.ListTags(ctx, domainID, p)
}

// Tag returns one of the domain's tags.
func (s *Service) Tag(ctx context.Context, domainID int64, name string) (Tag, error) {
	name, err := TagName(name)
	if err != nil {
		return Tag{}, err
	}
	t, err := s.store.Tag(ctx, domainID, name)
	return t, tagNotFound(err)
}

// Describe sets a tag's description and returns the tag.
func (s *Service) Describe(ctx context.Context, domainID int64, name, description string) (Tag, error) {
	name, err := TagName(name)
	if err != nil {
		return Tag{}, err
	}
	if utf8.RuneCountInString(description) > MaxDescription || !utf8.ValidString(description) {
		return Tag{}, apperr.Field("description", fmt.Sprintf("The description is at most %d characters of UTF-8.", MaxDescription))
	}
	if err := s.store.DescribeTag(ctx, domainID, name, description); err != nil {
		return Tag{}, tagNotFound(err)
	}
	return s.Tag(ctx, domainID, name)
}

// DeleteTag removes a tag and its counts (the domain's own counts keep
// its messages); a later message with the tag tracks it anew.
func (s *Service) DeleteTag(ctx context.Context, domainID int64, name string) error {
	name, err := TagName(name)
	if err != nil {
		return err
	}
	return tagNotFound(s.store.DeleteTag(ctx, domainID, name))
}
