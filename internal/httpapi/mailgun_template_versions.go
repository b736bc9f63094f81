package httpapi

import (
	"net/http"

	"github.com/postline/postline/internal/account"
	"github.com/postline/postline/internal/apperr"
	"github.com/postline/postline/internal/templates"
)

// handleMGTemplateVersions is GET /v3/{domain}/templates/{name}/versions
// (served by the general GET /v3/{a}/{b}/{c}/{d}): the versions by
// number, paged by tag like the templates by name.
func (s *Server) handleMGTemplateVersions(w http.ResponseWriter, r *http.Request, p account.Principal) error {
	d, err := s.mailgunDomain(r, p)
	if err != nil {
		return err
	}
	list, err := s.Templates.Versions(r.Context(), d.ID, r.PathValue("name"))
	if err != nil {
		return mgTemplateNotFound(err)
	}
	// Pages are cut by position in version order; p names a tag.
	keys := make([]string, len(list))
	for i, t := range list {
		keys[i] = t.Tag
	}
	from, to, limit, err := mgPage(r.URL.Query(), keys, func(p string) int {
		for i, k := range keys {
			if k == p {
				return i
			}
		}
		return len(keys)
	})
	if err != nil {
		return err
	}
	versions := []map[string]any{}
	for _, t := range list[from:to] {
		versions = append(versions, mgVersion(t, false))
	}
	out := mgTemplate(list[0])
	out["versions"] = versions
	base := s.publicBase(r) + "/v3/" + d.Name + "/templates/" + r.PathValue("name") + "/versions"
	writeJSON(w, http.StatusOK, map[string]any{"template": out, "paging": mgPaging(base, keys, from, to, limit)})
	return nil
}

// handleMGTemplateVersion is GET /v3/{domain}/templates/{name}/versions/{tag}.
func (s *Server) handleMGTemplateVersion(w http.ResponseWriter, r *http.Request, p account.Principal) error {
	d, err := s.mailgunDomain(r, p)
	if err != nil {
		return err
	}
	t, err := s.Templates.Version(r.Context(), d.ID, r.PathValue("name"), r.PathValue("tag"))
	if err != nil {
		return err
	}
	out := mgTemplate(t)
	out["version"] = mgVersion(t, true)
	writeJSON(w, http.StatusOK, map[string]any{"template": out})
	return nil
}

// handleMGTemplateVersionCreate is POST /v3/{domain}/templates/{name}/versions.
func (s *Server) handleMGTemplateVersionCreate(w http.ResponseWriter, r *http.Request, p account.Principal) error {
	d, err := s.mailgunDomain(r, p)
	if err != nil {
		return err
	}
	form, err := readMGTemplateForm(r, "template", "tag", "engine", "comment", "active", "headers")
	if err != nil {
		return err
	}
	if form.Get("tag") == "" {
		return apperr.Field("tag", "The tag is required.")
	}
	v, err := mgVersionIn(form, "")
	if err != nil {
		return err
	}
	t, err := s.Templates.AddMailgunVersion(r.Context(), d.ID, r.PathValue("name"), v)
	if err != nil {
		return mgTemplateNotFound(err)
	}
	out := mgTemplate(t)
	out["version"] = mgVersion(t, true)
	writeJSON(w, http.StatusOK, map[string]any{"message": "new version of the template has been stored", "template": out})
	return nil
}

// handleMGTemplateVersionUpdate is PUT .../versions/{tag}: template,
// comment, headers and active=yes change the version in place.
func (s *Server) handleMGTemplateVersionUpdate(w http.ResponseWriter, r *http.Request, p account.Principal) error {
	d, err := s.mailgunDomain(r, p)
	if err != nil {
		return err
	}
	form, err := readMGTemplateForm(r, "template", "comment", "active", "headers")
	if err != nil {
		return err
	}
	v, err := mgVersionIn(form, "")
	if err != nil {
		return err
	}
	u := templates.MailgunUpdate{Active: v.Active}
	if _, ok := form["template"]; ok {
		u.Template = &v.Template
	}
	if _, ok := form["comment"]; ok {
		u.Comment = &v.Comment
	}
	if _, ok := form["headers"]; ok {
		u.Subject = &v.Subject
	}
	t, err := s.Templates.UpdateMailgunVersion(r.Context(), d.ID, r.PathValue("name"), r.PathValue("tag"), u)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, map[string]any{"message": "version has been updated",
		"template": map[string]any{"name": t.Name, "version": map[string]string{"tag": t.Tag}}})
	return nil
}

// handleMGTemplateVersionDelete is DELETE .../versions/{tag}.
func (s *Server) handleMGTemplateVersionDelete(w http.ResponseWriter, r *http.Request, p account.Principal) error {
	d, err := s.mailgunDomain(r, p)
	if err != nil {
		return err
	}
	if err := s.Templates.DeleteVersion(r.Context(), d.ID, r.PathValue("name"), r.PathValue("tag")); err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, map[string]any{"message": "version has been deleted",
		"template": map[string]any{"name": r.PathValue("name"), "version": map[string]string{"tag": r.PathValue("tag")}}})
	return nil
}

// handleMGNoRoute answers a GET /v3/{a}/{b}/{c}/{d} no alt takes.
func (s *Server) handleMGNoRoute(w http.ResponseWriter, r *http.Request, p account.Principal) error {
	return apperr.Errorf(apperr.NotFound, "No route for %s %s", r.Method, r.URL.Path)
}

// mgTemplateVersionsAlt takes GET /v3/{domain}/templates/{name}/versions
// from the general GET /v3/{domain}/{kind}/{name}/{sub}.
func (s *Server) mgTemplateVersionsAlt() alt {
	return alt{route: route{method: "GET", path: "/v3/{domain}/templates/{name}/versions", group: groupMailgun, scope: account.ScopeSend,
		handler: s.handleMGTemplateVersions}, take: func(r *http.Request) bool {
		return r.PathValue("kind") == "templates" && r.PathValue("sub") == "versions"
	}}
}
