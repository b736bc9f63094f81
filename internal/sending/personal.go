package sending

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"strconv"
	"strings"
	"time"

	"github.com/postline/postline/internal/apperr"
	"github.com/postline/postline/internal/emailaddr"
	"github.com/postline/postline/internal/templates"
)

// TemplateLoader finds a domain's stored template (templates.Service).
type TemplateLoader interface {
	Load(ctx context.Context, domainID int64, name string, version int) (templates.Template, *templates.Compiled, error)
	LoadTag(ctx context.Context, domainID int64, name, tag string) (templates.Template, *templates.Compiled, error)
}

// DefaultMaxSchedule is how far ahead deliver_at may be by default.
const DefaultMaxSchedule = 7 * 24 * time.Hour

// personal is what a request asks beyond one fixed message: a template,
// variables, one message per recipient, a delivery time.
type personal struct {
	compiled *templates.Compiled // nil: the request's own content as it is
	vars     map[string]any
	// perRecipient holds recipient_variables by normalised address; non-nil
	// makes the request a batch: one message per recipient.
	perRecipient map[string]map[string]any
	deliverAt    time.Time // zero: at once
	// percent is Mailgun's %recipient.KEY% syntax (the /v3/ API) instead
	// of Handlebars: src and srcHeaders are substituted per recipient.
	percent    bool
	src        templates.Rendered
	srcHeaders map[string]string
	// deadline, when set, is when a batch's renders together must end.
	deadline time.Time
}

func (p personal) batch() bool { return p.perRecipient != nil }

func (p personal) deliverAtPtr() *time.Time {
	if p.deliverAt.IsZero() {
		return nil
	}
	t := p.deliverAt
	return &t
}

// at is when the deliveries are first due.
func (p personal) at(now time.Time) time.Time {
	if p.deliverAt.After(now) {
		return p.deliverAt
	}
	return now
}

// personalise reads the template, variables, recipient_variables and
// deliver_at fields. Without a batch, r's subject, html and text are
// rendered in place; in a batch they are left as template sources for
// validate, and each recipient's message is rendered by renderFor.
func (s *Service) personalise(ctx context.Context, domainID int64, r *Request, now time.Time) (personal, error) {
	var p personal
	fe := apperr.FieldErrors{}
	p.deliverAt = s.deliverAt(fe, r.DeliverAt, now)
	if strings.TrimSpace(r.Variables) != "" {
		if err := json.Unmarshal([]byte(r.Variables), &p.vars); err != nil || p.vars == nil {
			fe.Add("variables", "The variables field must be a JSON object.")
		}
	}
	if strings.TrimSpace(r.RecipientVariables) != "" {
		p.perRecipient = recipientVariables(fe, r.RecipientVariables, s.cfg.Limits.MaxRecipients)
		if len(r.Cc) > 0 || len(r.Bcc) > 0 {
			fe.Add("recipient_variables", "A batch sends one message per recipient: cc and bcc cannot be used with recipient_variables.")
		}
	}
	if err := fe.Err(); err != nil {
		return p, err
	}
	switch {
	case r.Percent && r.Template == "":
		p.percent = true
		p.src = templates.Rendered{Subject: r.Subject, Text: r.Text, HTML: r.HTML}
		if !p.batch() {
			out, _ := p.renderPercent(nil)
			r.Subject, r.Text, r.HTML = out.Subject, out.Text, out.HTML
		}
		return p, nil
	case r.Template != "":
		c, err := s.loadTemplate(ctx, domainID, r)
		if err != nil {
			return p, err
		}
		p.compiled = c
	case r.TemplateVersion != "":
		return p, apperr.Field("template_version", "The template_version field needs a template.")
	case p.vars != nil || p.perRecipient != nil:
		// Variables with the request's own content: an inline template.
		c, err := templates.Compile(r.Subject, r.HTML, r.Text, false)
		if err != nil {
			return p, err
		}
		p.compiled = c
	}
	if p.compiled != nil && !p.batch() {
		out, err := p.compiled.Render(p.vars)
		if err != nil {
			return p, err
		}
		r.Subject, r.HTML, r.Text = out.Subject, out.HTML, out.Text
	}
	return p, nil
}

// loadTemplate reads the request's template into its subject, html and
// text, and returns its compiled form.
func (s *Service) loadTemplate(ctx context.Context, domainID int64, r *Request) (*templates.Compiled, error) {
	subject := ""
	if r.TemplateByTag {
		subject, r.Subject = r.Subject, ""
	}
	if r.Subject != "" || r.Text != "" || r.HTML != "" {
		return nil, apperr.Field("template", "Give either a template or subject, text and html, not both.")
	}
	if s.cfg.Templates == nil {
		return nil, apperr.Field("template", "Templates are not available.")
	}
	var t templates.Template
	var c *templates.Compiled
	var err error
	switch v := strings.TrimSpace(r.TemplateVersion); {
	case r.TemplateByTag && v != "":
		t, c, err = s.cfg.Templates.LoadTag(ctx, domainID, r.Template, v)
	case v != "":
		n, nerr := strconv.Atoi(v)
		if nerr != nil || n < 1 {
			return nil, apperr.Field("template_version", "The template_version field must be a version number (1, 2, ...).")
		}
		t, c, err = s.cfg.Templates.Load(ctx, domainID, r.Template, n)
	default:
		t, c, err = s.cfg.Templates.Load(ctx, domainID, r.Template, 0)
	}
	if apperr.CodeOf(err) == apperr.NotFound {
		return nil, apperr.Field("template", err.Error())
	}
	if err != nil {
		return nil, err
	}
	r.Subject, r.HTML, r.Text = t.Subject, t.HTML, t.Text
	if subject != "" {
		r.Subject = subject
		return c.WithSubject(subject)
	}
	return c, nil
}

// deliverAt reads a deliver_at value: zero for none or a time already
// past (sent at once).
func (s *Service) deliverAt(fe apperr.FieldErrors, v string, now time.Time) time.Time {
	v = strings.TrimSpace(v)
	if v == "" {
		return time.Time{}
	}
	t, err := time.Parse(time.RFC3339, v)
	switch {
	case err != nil:
		fe.Add("deliver_at", "The deliver_at field must be an RFC 3339 date-time, e.g. 2026-11-25T09:00:00Z.")
	case t.Sub(now) > s.maxSchedule():
		fe.Add("deliver_at", fmt.Sprintf("The deliver_at field must be at most %s ahead.", s.maxSchedule()))
	case t.After(now):
		return t.UTC().Truncate(time.Millisecond)
	}
	return time.Time{}
}

func (s *Service) maxSchedule() time.Duration {
	if s.cfg.MaxSchedule > 0 {
		return s.cfg.MaxSchedule
	}
	return DefaultMaxSchedule
}

// recipientVariables reads the batch's JSON object of objects, keyed by
// address (normalised as recipients are).
func recipientVariables(fe apperr.FieldErrors, raw string, max int) map[string]map[string]any {
	var in map[string]map[string]any
	if err := json.Unmarshal([]byte(raw), &in); err != nil || in == nil {
		fe.Add("recipient_variables", `The recipient_variables field must be a JSON object of objects keyed by recipient address: {"ann@example.com": {"name": "Ann"}}.`)
		return nil
	}
	if len(in) > max {
		fe.Add("recipient_variables", fmt.Sprintf("The recipient_variables field must not name more than %d recipients.", max))
		return nil
	}
	out := make(map[string]map[string]any, len(in))
	for addr, v := range in {
		a, err := emailaddr.Parse(strings.TrimSpace(addr))
		if err != nil || a.Literal || !a.Strict() {
			fe.Add("recipient_variables", fmt.Sprintf("The recipient_variables key %q is not an email address.", trimForMessage(addr)))
			continue
		}
		if v == nil {
			v = map[string]any{}
		}
		out[a.Normalized()] = v
	}
	return out
}

// varsFor is the request's variables overlaid with the recipient's own.
func (p personal) varsFor(to string) map[string]any {
	vars := maps.Clone(p.vars)
	if vars == nil {
		vars = map[string]any{}
	}
	maps.Copy(vars, p.perRecipient[to])
	return vars
}

// renderFor renders the batch message of one recipient with vars
// (varsFor).
func (p personal) renderFor(to string, vars map[string]any) (templates.Rendered, map[string]string, error) {
	var out templates.Rendered
	var headers map[string]string
	var err error
	if p.percent {
		out, headers = p.renderPercent(vars)
	} else {
		out, err = p.compiled.RenderBefore(vars, p.deadline)
	}
	if err == nil {
		err = checkRendered(out)
	}
	if e, ok := apperr.As(err); ok {
		var why []string
		for _, msgs := range e.Fields {
			why = append(why, msgs...)
		}
		if len(why) == 0 {
			why = []string{e.Message}
		}
		return out, nil, apperr.Field("recipient_variables."+to, fmt.Sprintf("The message for %s cannot be rendered: %s", to, strings.Join(why, " ")))
	}
	return out, headers, err
}

// checkRendered makes validate's content checks on what only exists after
// rendering.
func checkRendered(out templates.Rendered) error {
	fe := apperr.FieldErrors{}
	checkContent(fe, out.Subject, out.Text, out.HTML)
	return fe.Err()
}

func trimForMessage(s string) string {
	if len(s) > 80 {
		return strings.ToValidUTF8(s[:80], "") + "…"
	}
	return s
}
