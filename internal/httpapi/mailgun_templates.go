package httpapi

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/postline/postline/internal/account"
	"github.com/postline/postline/internal/apperr"
	"github.com/postline/postline/internal/templates"
)

// Mailgun's templates API (/v3/{domain}/templates) over the domain's
// templates: a Mailgun version is a Postline version with a tag, its
// "template" the HTML part (package templates, mailgun.go). Answers are
// Mailgun's: {"template": {name, description, createdAt, createdBy, id,
// version|versions}}, lists with Mailgun's paging by name (p) or tag.

const mgTemplatePageMax = 100

// mgTemplateVersionsRoute takes GET /v3/domains/templates/{name}/versions
// (a domain named "domains") from the webhook route that also matches it.
func (s *Server) mgTemplateVersionsRoute() alt {
	return alt{route: route{method: "GET", path: "/v3/{domain}/templates/{name}/versions", group: groupMailgun, scope: account.ScopeSend,
		handler: s.handleMGTemplateVersions}, take: func(r *http.Request) bool {
		if r.PathValue("domain") != "templates" || r.PathValue("id") != "versions" {
			return false
		}
		r.SetPathValue("domain", "domains")
		r.SetPathValue("name", "webhooks")
		return true
	}}
}

func mgTemplateTime(t time.Time) string { return t.UTC().Format("Mon, 02 Jan 2006 15:04:05 MST") }

// mgTemplate is a template's Mailgun shape from one of its versions.
func mgTemplate(t templates.Template) map[string]any {
	return map[string]any{"name": t.Name, "description": t.Description, "createdAt": mgTemplateTime(t.CreatedAt), "createdBy": "",
		"id": strconv.FormatInt(t.ID, 10)}
}

// mgVersion is a version's Mailgun shape; content adds the template.
func mgVersion(t templates.Template, content bool) map[string]any {
	m := map[string]any{"tag": t.Tag, "engine": "handlebars", "mjml": "", "createdAt": mgTemplateTime(t.CreatedAt), "comment": t.Comment,
		"active": t.Active, "id": strconv.FormatInt(t.ID, 10)}
	if content {
		m["template"] = t.HTML
		if t.Subject != "" {
			m["headers"] = map[string]string{"Subject": t.Subject}
		} else {
			m["headers"] = map[string]string{}
		}
	}
	return m
}

// readMGTemplateForm reads the allowed form parameters (mgForm).
func readMGTemplateForm(r *http.Request, allowed ...string) (url.Values, error) {
	return readMGWebhookForm(r, allowed...)
}

// mgVersionIn reads a version's template, tag, engine, comment, active and
// headers (only Subject is kept; From and Reply-To are refused).
func mgVersionIn(form url.Values, tagDefault string) (templates.MailgunVersion, error) {
	v := templates.MailgunVersion{Tag: form.Get("tag"), Comment: form.Get("comment"), Template: form.Get("template")}
	if v.Tag == "" {
		v.Tag = tagDefault
	}
	if e := form.Get("engine"); e != "" && !strings.EqualFold(e, "handlebars") {
		return v, apperr.Field("engine", "Only the handlebars engine is supported.")
	}
	if a := form.Get("active"); a != "" {
		on, err := yesNo(a)
		if err != nil {
			return v, apperr.Field("active", "The active "+err.Error()+".")
		}
		v.Active = on
	}
	subject, err := mgTemplateHeaders(form)
	if subject != nil {
		v.Subject = *subject
	}
	return v, err
}

// mgTemplateHeaders reads the headers JSON object: its Subject, nil when
// not given.
func mgTemplateHeaders(form url.Values) (*string, error) {
	raw, ok := form["headers"]
	if !ok || strings.TrimSpace(raw[0]) == "" {
		return nil, nil
	}
	var h map[string]string
	if err := json.Unmarshal([]byte(raw[0]), &h); err != nil {
		return nil, apperr.Field("headers", `The headers must be a JSON object such as {"Subject": "Hello {{name}}"}.`)
	}
	subject := ""
	for k, v := range h {
		if !strings.EqualFold(k, "Subject") {
			return nil, apperr.Field("headers", fmt.Sprintf("Only the Subject header is supported, not %s: give it with the send.", k))
		}
		subject = v
	}
	return &subject, nil
}

// handleMGTemplateCreate is POST /v3/{domain}/templates: a template and,
// with template given, its first version (tag "initial" unless given).
func (s *Server) handleMGTemplateCreate(w http.ResponseWriter, r *http.Request, p account.Principal) error {
	d, err := s.mailgunDomain(r, p)
	if err != nil {
		return err
	}
	form, err := readMGTemplateForm(r, "name", "description", "template", "tag", "engine", "comment", "headers", "createdBy")
	if err != nil {
		return err
	}
	if form.Get("template") == "" {
		return apperr.Field("template", "The template is required: Postline keeps a template with at least one version.")
	}
	v, err := mgVersionIn(form, "initial")
	if err != nil {
		return err
	}
	v.Active = true
	t, err := s.Templates.CreateMailgun(r.Context(), d.ID, form.Get("name"), form.Get("description"), v)
	if err != nil {
		return err
	}
	out := mgTemplate(t)
	out["version"] = mgVersion(t, true)
	writeJSON(w, http.StatusOK, map[string]any{"message": "template has been stored", "template": out})
	return nil
}

// handleMGTemplates is GET /v3/{domain}/templates: a page of templates by
// name (page first, last, next or prev; p the name paged from).
func (s *Server) handleMGTemplates(w http.ResponseWriter, r *http.Request, p account.Principal) error {
	d, err := s.mailgunDomain(r, p)
	if err != nil {
		return err
	}
	list, err := s.Templates.List(r.Context(), d.ID)
	if err != nil {
		return err
	}
	keys := make([]string, len(list))
	for i, t := range list {
		keys[i] = t.Name
	}
	from, to, limit, err := mgPage(r.URL.Query(), keys, func(p string) int { return sort.SearchStrings(keys, p) })
	if err != nil {
		return err
	}
	items := []map[string]any{}
	for _, t := range list[from:to] {
		items = append(items, mgTemplate(t))
	}
	writeJSON(w, http.StatusOK, map[string]any{"items": items,
		"paging": mgPaging(s.publicBase(r)+"/v3/"+d.Name+"/templates", keys, from, to, limit)})
	return nil
}

// mgPage picks a page of sorted keys: page first (default), last, next
// (keys after p) or prev (keys before p); limit 1 to 100, 10 by default.
// at is where p falls in keys (the index of the first key not before it).
func mgPage(q url.Values, keys []string, at func(p string) int) (from, to, limit int, err error) {
	limit = 10
	if v := q.Get("limit"); v != "" {
		if limit, err = strconv.Atoi(v); err != nil || limit < 1 || limit > mgTemplatePageMax {
			return 0, 0, 0, apperr.Field("limit", fmt.Sprintf("The limit must be 1 to %d.", mgTemplatePageMax))
		}
	}
	pivot := q.Get("p")
	i := at(pivot)
	switch q.Get("page") {
	case "", "first":
		from = 0
	case "last":
		from = max(0, len(keys)-limit)
	case "next":
		if i < len(keys) && keys[i] == pivot {
			i++
		}
		from = i
	case "prev", "previous":
		from = max(0, i-limit)
		return from, i, limit, nil
	default:
		return 0, 0, 0, apperr.Field("page", "The page must be first, last, next or prev.")
	}
	return from, min(len(keys), from+limit), limit, nil
}

// mgPaging is Mailgun's paging links around keys[from:to].
func mgPaging(base string, keys []string, from, to, limit int) map[string]string {
	link := func(page, p string) string {
		u := fmt.Sprintf("%s?limit=%d&page=%s", base, limit, page)
		if p != "" {
			u += "&p=" + url.QueryEscape(p)
		}
		return u
	}
	next, prev := "", ""
	if to > from {
		next, prev = keys[to-1], keys[from]
	} else if from < len(keys) {
		next, prev = "", keys[from]
	} else if len(keys) > 0 {
		next, prev = keys[len(keys)-1], keys[len(keys)-1]
	}
	return map[string]string{"first": link("first", ""), "last": link("last", ""), "next": link("next", next),
		"previous": link("prev", prev)}
}

// handleMGTemplate is GET /v3/{domain}/templates/{name}; active=yes adds
// the active version with its content.
func (s *Server) handleMGTemplate(w http.ResponseWriter, r *http.Request, p account.Principal) error {
	d, err := s.mailgunDomain(r, p)
	if err != nil {
		return err
	}
	active := false
	if v := r.URL.Query().Get("active"); v != "" {
		if active, err = yesNo(v); err != nil {
			return apperr.Field("active", "The active "+err.Error()+".")
		}
	}
	t, err := s.Templates.Get(r.Context(), d.ID, r.PathValue("name"), 0)
	if err != nil {
		return mgTemplateNotFound(err)
	}
	out := mgTemplate(t)
	if active {
		out["version"] = mgVersion(t, true)
	}
	writeJSON(w, http.StatusOK, map[string]any{"template": out})
	return nil
}

// mgTemplateNotFound words a missing template as Mailgun does.
func mgTemplateNotFound(err error) error {
	if apperr.CodeOf(err) == apperr.NotFound {
		return apperr.Errorf(apperr.NotFound, "template not found")
	}
	return err
}

// handleMGTemplateUpdate is PUT /v3/{domain}/templates/{name}: the
// description.
func (s *Server) handleMGTemplateUpdate(w http.ResponseWriter, r *http.Request, p account.Principal) error {
	d, err := s.mailgunDomain(r, p)
	if err != nil {
		return err
	}
	form, err := readMGTemplateForm(r, "description")
	if err != nil {
		return err
	}
	if err := s.Templates.SetDescription(r.Context(), d.ID, r.PathValue("name"), form.Get("description")); err != nil {
		return mgTemplateNotFound(err)
	}
	writeJSON(w, http.StatusOK, map[string]any{"message": "template has been updated", "template": map[string]string{"name": r.PathValue("name")}})
	return nil
}

// handleMGTemplateDelete is DELETE /v3/{domain}/templates/{name}.
func (s *Server) handleMGTemplateDelete(w http.ResponseWriter, r *http.Request, p account.Principal) error {
	d, err := s.mailgunDomain(r, p)
	if err != nil {
		return err
	}
	if err := s.Templates.Delete(r.Context(), d.ID, r.PathValue("name")); err != nil {
		return mgTemplateNotFound(err)
	}
	writeJSON(w, http.StatusOK, map[string]any{"message": "template has been deleted", "template": map[string]string{"name": r.PathValue("name")}})
	return nil
}

// handleMGTemplatesDelete is DELETE /v3/{domain}/templates: every one.
func (s *Server) handleMGTemplatesDelete(w http.ResponseWriter, r *http.Request, p account.Principal) error {
	d, err := s.mailgunDomain(r, p)
	if err != nil {
		return err
	}
	if err := s.Templates.DeleteAll(r.Context(), d.ID); err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, map[string]any{"message": "templates have been deleted"})
	return nil
}
