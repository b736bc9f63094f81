package stats

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"
	"unicode"
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
	// MaxTagsPerEntry is how many of an entry's tags are tracked: its
	// first 10, as Mailgun's o:tag allows (the tags field's 255 characters
	// could name a hundred).
	MaxTagsPerEntry = 10
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
// the first MaxTagsPerEntry of those that a request can name (TagName),
// folded, each once. Every recording of an entry writes each of its
// tags' rows, so their number is what a message costs each of its events.
func TagsOf(raw string) []string {
	if raw == "" {
		return nil
	}
	var out []string
	for t := range strings.SplitSeq(raw, ",") {
		if len(out) == MaxTagsPerEntry {
			break
		}
		t = strings.TrimSpace(t)
		if t == "" || badTagText(t) != "" {
			continue
		}
		if t = event.Fold(t); !slices.Contains(out, t) {
			out = append(out, t)
		}
	}
	return out
}

// TagName checks a tag named in a request and returns it folded.
func TagName(name string) (string, error) {
	name = strings.TrimSpace(name)
	if name == "" {
		return "", apperr.Field("tag", "The tag is required.")
	}
	if bad := badTagText(name); bad != "" {
		return "", apperr.Field("tag", bad)
	}
	return event.Fold(name), nil
}

// badTagText says why s cannot be (part of) a tag, "" when it can: longer
// than a tag, not UTF-8, or with control characters, which sends refuse
// in tags. The database must never see those: PostgreSQL fails a query
// with a NUL or invalid UTF-8 in a parameter.
func badTagText(s string) string {
	if utf8.RuneCountInString(s) > MaxTagLength || !utf8.ValidString(s) || strings.ContainsFunc(s, unicode.IsControl) {
		return fmt.Sprintf("A tag has at most %d characters of UTF-8 without control characters.", MaxTagLength)
	}
	return ""
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
	fe := apperr.FieldErrors{}
	for field, v := range map[string]string{"prefix": p.Prefix, "tag": p.Pivot} {
		if bad := badTagText(v); bad != "" {
			fe.Add(field, bad)
		}
	}
	if err := fe.Err(); err != nil {
		return nil, err
	}
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
	if utf8.RuneCountInString(description) > MaxDescription || !utf8.ValidString(description) || strings.ContainsRune(description, 0) {
		return Tag{}, apperr.Field("description", fmt.Sprintf("The description is at most %d characters of UTF-8 without NUL characters.", MaxDescription))
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
