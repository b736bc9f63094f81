package sending

import (
	"encoding/json"
	"fmt"
	"github.com/postline/postline/internal/domain"
	"maps"
	"net/mail"
	"strings"
	"unicode"
	"unicode/utf8"

	"golang.org/x/net/publicsuffix"

	"github.com/postline/postline/internal/apperr"
	"github.com/postline/postline/internal/emailaddr"
	"github.com/postline/postline/internal/message"
)

// Request is a send request as the API received it.
type Request struct {
	From, FromName string
	To             []string
	Subject        string
	Text, HTML     string
	Headers        string // JSON object of custom headers, as given
	ReplyTo        string
	Tags           string
	Options        string // attachment_options JSON, as given
	Attachments    []Attachment
	// Cc and Bcc are further recipients (repeatable or comma-separated,
	// like To): cc ones are shown to everyone, bcc ones to nobody.
	Cc, Bcc []string
	// Template names a stored template (its active version, or
	// TemplateVersion) used instead of Subject, Text and HTML.
	Template, TemplateVersion string
	// TemplateByTag (Mailgun's sends): TemplateVersion is a version's tag
	// (t:version), and a Subject given replaces the template's.
	TemplateByTag bool
	// Variables is a JSON object the template is rendered with;
	// RecipientVariables, a JSON object of such objects keyed by
	// recipient, makes one message per recipient.
	Variables, RecipientVariables string
	// DeliverAt (RFC 3339) holds the message in the queue until then.
	DeliverAt string
	// Percent selects Mailgun's %recipient.KEY% substitution (in the
	// subject, both bodies and header values) instead of Handlebars for
	// RecipientVariables: the /v3/ API's batch syntax.
	Percent bool
	// TrackOpens and TrackClicks override the domain's tracking for this
	// message (nil: the domain's).
	TrackOpens, TrackClicks *bool
	// Sender, ListUnsubscribe and ListUnsubscribePost are headers the
	// service otherwise writes itself, given by the /v3/ API's h:
	// parameters: the sender's own unsubscribe replaces the domain's for
	// the message.
	Sender, ListUnsubscribe, ListUnsubscribePost string
	// Senders lists the domains the submitter may speak for: Sender and
	// the Resent-From and Resent-Sender custom headers must be at the
	// send's domain or at one of them (nil: the send's domain only).
	Senders SenderDomains
	// OneMessageID gives every copy of the message one Message-ID, as
	// Mailgun does (the /v3/ API): MessageID when given, else a new one.
	// Without it each recipient's copy has its own. The log keeps the
	// copies apart by recipient (and the queue by delivery).
	OneMessageID bool
	// MessageID is the sender's own Message-ID (the /v3/ API's
	// h:Message-Id, angle brackets optional), with OneMessageID only: an
	// RFC 5322 msg-id at one of the account's verified domains.
	MessageID string
	// TestMode accepts and logs the message (queued entries with
	// details.testmode) without queueing a delivery: Mailgun's o:testmode.
	TestMode bool
}

// The service's own names, in a send's stored headers, for what the worker
// writes as Sender and List-Unsubscribe(-Post).
const (
	senderHeader    = "X-Postline-Sender"
	listUnsubHeader = "X-Postline-List-Unsubscribe"
	listPostHeader  = "X-Postline-List-Unsubscribe-Post"
)

// ownHeaders checks the request's Sender and List-Unsubscribe fields and
// returns them under the service's names.
func (r Request) ownHeaders(fe apperr.FieldErrors) map[string]string {
	if r.Sender == "" && r.ListUnsubscribe == "" && r.ListUnsubscribePost == "" {
		return nil
	}
	out := map[string]string{}
	if r.Sender != "" {
		if a, err := emailaddr.Parse(strings.TrimSpace(r.Sender)); err != nil || a.Literal || !a.Strict() {
			fe.Add("sender", "The Sender header must be one email address.")
		} else {
			out[senderHeader] = a.Normalized()
		}
	}
	if r.ListUnsubscribe != "" {
		v := strings.TrimSpace(r.ListUnsubscribe)
		if err := message.CheckHeaderValue("List-Unsubscribe", v); err != nil || !strings.HasPrefix(v, "<") || strings.ContainsFunc(v, func(c rune) bool { return c > 0x7e }) {
			fe.Add("list_unsubscribe", "The List-Unsubscribe header must be one line of <URI> entries in ASCII (RFC 2369).")
		} else {
			out[listUnsubHeader] = v
			out[listPostHeader] = "-"
		}
	}
	if r.ListUnsubscribePost != "" {
		if strings.TrimSpace(r.ListUnsubscribePost) != "List-Unsubscribe=One-Click" || r.ListUnsubscribe == "" {
			fe.Add("list_unsubscribe_post", "The List-Unsubscribe-Post header must be List-Unsubscribe=One-Click (RFC 8058), with a List-Unsubscribe.")
		} else {
			out[listPostHeader] = "List-Unsubscribe=One-Click"
		}
	}
	return out
}

// trackOverride is the X-Postline-Track value that carries a request's
// tracking switches to the worker ("" when the domain's apply).
func (r Request) trackOverride(dom domain.Domain) string {
	if r.TrackOpens == nil && r.TrackClicks == nil {
		return ""
	}
	opens, clicks := dom.Tracking.Opens, dom.Tracking.Clicks
	if r.TrackOpens != nil {
		opens = *r.TrackOpens
	}
	if r.TrackClicks != nil {
		clicks = *r.TrackClicks
	}
	switch {
	case opens && clicks:
		return "opens,clicks"
	case opens:
		return "opens"
	case clicks:
		return "clicks"
	}
	return "none"
}

// Limits bound one request. Zero values take the defaults.
type Limits struct {
	MaxRecipients      int   // default 1000
	MaxAttachments     int   // default 20
	MaxAttachmentBytes int64 // default 10 MiB
	MaxTotalBytes      int64 // default 25 MiB, all attachments together
}

func (l Limits) withDefaults() Limits {
	if l.MaxRecipients == 0 {
		l.MaxRecipients = 1000
	}
	if l.MaxAttachments == 0 {
		l.MaxAttachments = 20
	}
	if l.MaxAttachmentBytes == 0 {
		l.MaxAttachmentBytes = 10 << 20
	}
	if l.MaxTotalBytes == 0 {
		l.MaxTotalBytes = 25 << 20
	}
	return l
}

// checked is a request that passed validation.
type checked struct {
	Request
	to      []string // every recipient (to, cc, bcc): normalised, deduplicated
	headers map[string]string
	// addressing is what the To and Cc headers show (empty: each copy shows
	// only its recipient, the API's original behaviour).
	addressing Addressing
}

// validate checks everything that does not need the database, naming each
// bad field; domainName is the {domain} of the path (A-label).
func validate(r Request, domainName string, lim Limits) (checked, error) {
	fe := apperr.FieldErrors{}
	c := checked{Request: r}
	from, fromOK := address(fe, "from", r.From, true)
	if fromOK && !strings.EqualFold(from.ASCIIDomain, domainName) {
		fe.Add("from", fmt.Sprintf("The from address must belong to the domain %s.", domainName))
	}
	if r.FromName != "" {
		if utf8.RuneCountInString(r.FromName) > 200 {
			fe.Add("from_name", "The from_name must be one line of at most 200 characters.")
		} else if err := message.CheckHeaderValue("From", r.FromName); err != nil {
			fe.Add("from_name", "The from_name "+problem(err))
		}
	}
	c.to, c.addressing = allRecipients(fe, r, lim.MaxRecipients)
	checkContent(fe, r.Subject, r.Text, r.HTML)
	if !utf8.ValidString(r.Tags) || strings.ContainsRune(r.Tags, 0) {
		fe.Add("tags", "The tags field must be valid UTF-8 without NUL characters.")
	}
	if r.ReplyTo != "" {
		if rt, ok := address(fe, "reply_to", r.ReplyTo, false); ok && fromOK && !sameRegistrable(rt.ASCIIDomain, from.ASCIIDomain) {
			fe.Add("reply_to", "The reply_to address must share the registrable domain of from.")
		}
	}
	c.headers = customHeaders(fe, r.Headers)
	if own := r.ownHeaders(fe); len(own) > 0 && c.headers != nil {
		// After customHeaders, which refuses these names from senders.
		maps.Copy(c.headers, own)
	}
	if len(r.Tags) > maxTagsLength || strings.ContainsFunc(r.Tags, unicode.IsControl) {
		fe.Add("tags", "The tags must be one line of at most 255 characters without control characters.")
	}
	attachmentLimits(fe, r.Attachments, lim)
	return c, fe.Err()
}

// maxTagsLength bounds a message's tags, comma-separated, on every door.
const maxTagsLength = 255

// tagsProblem says what is wrong with a message's tags (comma-separated),
// "" when nothing is: raw sends (messages.mime, SMTP submission) take them
// from their own fields, which must keep the API's rules. The log and the
// stats keep them, and PostgreSQL refuses NUL and invalid UTF-8.
func tagsProblem(tags string) string {
	if len(tags) > maxTagsLength || !utf8.ValidString(tags) || strings.ContainsFunc(tags, unicode.IsControl) {
		return fmt.Sprintf("The tags must be one line of at most %d characters of UTF-8 without control characters.", maxTagsLength)
	}
	return ""
}

// checkContent makes the checks the message build relies on: a subject of
// one foldable line without control characters, a text part, valid UTF-8.
// Rendered template output goes through them too.
func checkContent(fe apperr.FieldErrors, subject, text, html string) {
	switch {
	case strings.TrimSpace(subject) == "":
		fe.Add("subject", "The subject field is required.")
	case utf8.RuneCountInString(subject) > 998:
		fe.Add("subject", "The subject must not be greater than 998 characters.")
	default:
		if err := message.CheckHeaderValue("Subject", subject); err != nil {
			fe.Add("subject", "The subject "+problem(err))
		}
	}
	if strings.TrimSpace(text) == "" {
		fe.Add("text", "The text field is required.")
	}
	for field, v := range map[string]string{"text": text, "html": html} {
		if !utf8.ValidString(v) || strings.ContainsRune(v, 0) {
			fe.Add(field, "The "+field+" field must be valid UTF-8 without NUL characters.")
		}
	}
}

func address(fe apperr.FieldErrors, field, s string, required bool) (emailaddr.Address, bool) {
	if strings.TrimSpace(s) == "" {
		if required {
			fe.Add(field, fmt.Sprintf("The %s field is required.", field))
		}
		return emailaddr.Address{}, false
	}
	a, err := emailaddr.Parse(strings.TrimSpace(s))
	if err != nil || a.Literal || !a.Strict() {
		fe.Add(field, fmt.Sprintf("The %s field must be a valid email address.", field))
		return a, false
	}
	return a, true
}

// splitList splits repeated and comma-separated values, keeping quoted
// display names whole ("Doe, Jane" <jane@example.com>).
func splitList(values []string) []string {
	var out []string
	eachEntry(values, func(e string) bool { out = append(out, e); return true })
	return out
}

// countList counts the entries of values, stopping past limit, without
// building them (a request may hold millions).
func countList(values []string, limit int) int {
	n := 0
	eachEntry(values, func(string) bool { n++; return n <= limit })
	return n
}

// eachEntry calls fn with every entry of values until it returns false.
func eachEntry(values []string, fn func(string) bool) {
	for _, v := range values {
		start, quoted, angle := 0, false, false
		for i := 0; i <= len(v); i++ {
			if i < len(v) {
				switch v[i] {
				case '"':
					quoted = !quoted
				case '<':
					angle = true
				case '>':
					angle = false
				}
				if v[i] != ',' || quoted || angle {
					continue
				}
			}
			if p := strings.TrimSpace(v[start:i]); p != "" && !fn(p) {
				return
			}
			start = i + 1
		}
	}
}

// mailboxes parses one recipient field: bare addresses or display names
// with an address (RFC 5322: Jane Doe <jane@example.com>).
func mailboxes(fe apperr.FieldErrors, field string, values []string) []message.Mailbox {
	var out []message.Mailbox
	for i, s := range splitList(values) {
		name, addr := "", s
		if strings.ContainsAny(s, "<\"") {
			m, err := mail.ParseAddress(s)
			if err != nil {
				fe.Add(fmt.Sprintf("%s.%d", field, i), fmt.Sprintf("The recipient %q is not a valid address (an address, or Name <address>).", s))
				continue
			}
			name, addr = m.Name, m.Address
		}
		a, err := emailaddr.Parse(addr)
		if err != nil || a.Literal || !a.Strict() {
			fe.Add(fmt.Sprintf("%s.%d", field, i), fmt.Sprintf("The recipient %q is not a valid email address.", s))
			continue
		}
		if strings.ContainsFunc(name, unicode.IsControl) || utf8.RuneCountInString(name) > 200 {
			fe.Add(fmt.Sprintf("%s.%d", field, i), "A display name must be one line of at most 200 characters.")
			continue
		}
		out = append(out, message.Mailbox{Name: name, Addr: a.Normalized()})
	}
	return out
}

// allRecipients checks to, cc and bcc (at most max together) and returns
// every distinct address and what the headers show.
func allRecipients(fe apperr.FieldErrors, r Request, max int) ([]string, Addressing) {
	if n := countList(r.To, max) + countList(r.Cc, max) + countList(r.Bcc, max); n > max {
		// Checked before parsing: the request may hold millions.
		fe.Add("to", fmt.Sprintf("The to field must not have more than %d recipients (to, cc and bcc together).", max))
		return nil, Addressing{}
	}
	to, cc, bcc := mailboxes(fe, "to", r.To), mailboxes(fe, "cc", r.Cc), mailboxes(fe, "bcc", r.Bcc)
	if len(to) == 0 && countList(r.To, 1) == 0 {
		fe.Add("to", "The to field is required.")
		return nil, Addressing{}
	}
	seen := map[string]bool{}
	var all []string
	named := false
	for _, list := range [][]message.Mailbox{to, cc, bcc} {
		for _, m := range list {
			named = named || m.Name != ""
			if k := strings.ToLower(m.Addr); !seen[k] {
				seen[k] = true
				all = append(all, m.Addr)
			}
		}
	}
	var a Addressing
	if len(cc) > 0 || named {
		a = Addressing{To: to, Cc: cc}
	}
	return all, a
}

// sameRegistrable compares registrable domains (public-suffix aware), so
// that mail.example.co.uk and example.co.uk match but a.co.uk and b.co.uk
// do not.
func sameRegistrable(a, b string) bool {
	ra, errA := publicsuffix.EffectiveTLDPlusOne(strings.ToLower(a))
	rb, errB := publicsuffix.EffectiveTLDPlusOne(strings.ToLower(b))
	return errA == nil && errB == nil && ra == rb
}

func customHeaders(fe apperr.FieldErrors, raw string) map[string]string {
	if strings.TrimSpace(raw) == "" {
		return map[string]string{}
	}
	var h map[string]string
	if err := json.Unmarshal([]byte(raw), &h); err != nil {
		fe.Add("headers", "The headers field must be a JSON object of header names to string values.")
		return nil
	}
	if len(h) > 50 {
		fe.Add("headers", "The headers field must not have more than 50 headers.")
	}
	seen := make(map[string]string, len(h))
	for name, v := range h {
		// Names are case-insensitive: Resent-From and resent-from are two
		// fields of one name, which the message may not have.
		if other, ok := seen[strings.ToLower(name)]; ok {
			first, second := min(name, other), max(name, other)
			fe.Add("headers."+second, fmt.Sprintf("The header %s is given twice (as %s too): header names are case-insensitive.", second, first))
		}
		seen[strings.ToLower(name)] = name
		if err := message.CheckHeaderName(name); err != nil {
			fe.Add("headers."+name, reason(err))
		}
		if len(v) > 998 {
			fe.Add("headers."+name, "Header values must be one line of at most 998 characters.")
		} else if err := message.CheckHeaderValue(name, v); err != nil {
			fe.Add("headers."+name, reason(err))
		}
	}
	return h
}

func attachmentLimits(fe apperr.FieldErrors, atts []Attachment, lim Limits) {
	if len(atts) > lim.MaxAttachments {
		fe.Add("attachments", fmt.Sprintf("At most %d attachments are allowed.", lim.MaxAttachments))
	}
	var total int64
	for i, a := range atts {
		if len(a.ContentType) > 255 || !utf8.ValidString(a.ContentType) || strings.ContainsFunc(a.ContentType, unicode.IsControl) {
			fe.Add(fmt.Sprintf("attachments.%d", i), fmt.Sprintf("The content type of attachment %q must be at most 255 printable characters.", a.Filename))
		}
		if a.ContentID != "" && !message.ValidContentID(a.ContentID) {
			fe.Add(fmt.Sprintf("attachments.%d", i), fmt.Sprintf("The inline file %q names its Content-ID: use a name of printable ASCII without spaces, <, > or quotes.", a.Filename))
		}
		if !utf8.ValidString(a.Filename) || strings.ContainsFunc(a.Filename, unicode.IsControl) {
			fe.Add(fmt.Sprintf("attachments.%d", i), "The attachment's file name must be valid UTF-8 without control characters.")
		}
		size := int64(len(a.Data))
		total += size
		if size > lim.MaxAttachmentBytes {
			fe.Add(fmt.Sprintf("attachments.%d", i), fmt.Sprintf("The attachment %q exceeds the limit of %d bytes.", a.Filename, lim.MaxAttachmentBytes))
		}
	}
	if total > lim.MaxTotalBytes {
		fe.Add("attachments", fmt.Sprintf("Attachments together exceed the limit of %d bytes.", lim.MaxTotalBytes))
	}
}

// reason is the client-facing text of a message-build check's error (its
// Message, without the field prefix Error() adds).
func reason(err error) string {
	if ae, ok := apperr.As(err); ok {
		return ae.Message
	}
	return err.Error()
}

// problem is that reason for a sentence about another field: "The subject
// must not contain control characters".
func problem(err error) string {
	msg := reason(err)
	for _, cut := range []string{"the value of header Subject ", "the value of header From "} {
		if rest, ok := strings.CutPrefix(msg, cut); ok {
			return rest
		}
	}
	if strings.Contains(msg, "too long") {
		return "is too long to fold into lines of 998 octets"
	}
	return "cannot be written into a message header"
}
