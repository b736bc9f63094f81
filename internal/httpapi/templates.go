package httpapi

import (
	"net/http"
	"strconv"

	"github.com/postline/postline/internal/account"
	"github.com/postline/postline/internal/apperr"
	"github.com/postline/postline/internal/templates"
)

// maxTemplateBody fits a template's html and text parts at their limits.
const maxTemplateBody = 2*templates.MaxPartBytes + 64<<10

type templateBody struct {
	Name    string `json:"name"`
	Subject string `json:"subject"`
	HTML    string `json:"html"`
	Text    string `json:"text"`
	Strict  bool   `json:"strict"`
}

func (b templateBody) input() templates.Input {
	return templates.Input{Name: b.Name, Subject: b.Subject, HTML: b.HTML, Text: b.Text, Strict: b.Strict}
}

func templateView(t templates.Template, content bool) map[string]any {
	m := map[string]any{"name": t.Name, "version": t.Version, "subject": t.Subject, "strict": t.Strict,
		"created_at": timeJSON(t.CreatedAt)}
	if content {
		m["html"], m["text"] = t.HTML, t.Text
	} else {
		m["versions"] = t.Versions
	}
	return m
}

func (s *Server) handleCreateTemplate(w http.ResponseWriter, r *http.Request, p account.Principal) error {
	var in templateBody
	if err := decodeJSON(r, &in); err != nil {
		return err
	}
	d, err := s.Domains.Owned(r.Context(), p.AccountID, r.PathValue("domain"))
	if err != nil {
		return err
	}
	t, err := s.Templates.Create(r.Context(), d.ID, in.input())
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusCreated, map[string]any{"success": true, "message": "Template " + t.Name + " created (version 1).",
		"data": templateView(t, true)})
	return nil
}

func (s *Server) handleListTemplates(w http.ResponseWriter, r *http.Request, p account.Principal) error {
	d, err := s.Domains.Owned(r.Context(), p.AccountID, r.PathValue("domain"))
	if err != nil {
		return err
	}
	list, err := s.Templates.List(r.Context(), d.ID)
	if err != nil {
		return err
	}
	out := make([]map[string]any, len(list))
	for i, t := range list {
		out[i] = templateView(t, false)
	}
	writeJSON(w, http.StatusOK, map[string]any{"success": true, "data": out})
	return nil
}

// templateVersion reads ?version= (0: the active version).
func templateVersion(v string, field string) (int, error) {
	if v == "" {
		return 0, nil
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < 1 {
		return 0, apperr.Field(field, "The "+field+" must be a version number (1, 2, ...).")
	}
	return n, nil
}

func (s *Server) handleGetTemplate(w http.ResponseWriter, r *http.Request, p account.Principal) error {
	d, err := s.Domains.Owned(r.Context(), p.AccountID, r.PathValue("domain"))
	if err != nil {
		return err
	}
	version, err := templateVersion(r.URL.Query().Get("version"), "version")
	if err != nil {
		return err
	}
	t, err := s.Templates.Get(r.Context(), d.ID, r.PathValue("name"), version)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, map[string]any{"success": true, "data": templateView(t, true)})
	return nil
}

func (s *Server) handleUpdateTemplate(w http.ResponseWriter, r *http.Request, p account.Principal) error {
	var in templateBody
	if err := decodeJSON(r, &in); err != nil {
		return err
	}
	d, err := s.Domains.Owned(r.Context(), p.AccountID, r.PathValue("domain"))
	if err != nil {
		return err
	}
	t, err := s.Templates.Update(r.Context(), d.ID, r.PathValue("name"), in.input())
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, map[string]any{"success": true,
		"message": "Template " + t.Name + " version " + strconv.Itoa(t.Version) + " is now the active one.", "data": templateView(t, true)})
	return nil
}

func (s *Server) handleDeleteTemplate(w http.ResponseWriter, r *http.Request, p account.Principal) error {
	d, err := s.Domains.Owned(r.Context(), p.AccountID, r.PathValue("domain"))
	if err != nil {
		return err
	}
	if err := s.Templates.Delete(r.Context(), d.ID, r.PathValue("name")); err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, map[string]any{"success": true, "message": "Template " + r.PathValue("name") + " and its versions deleted."})
	return nil
}

// handleRenderTemplate previews a template with variables, exactly as a
// send would render it.
func (s *Server) handleRenderTemplate(w http.ResponseWriter, r *http.Request, p account.Principal) error {
	var in struct {
		Variables map[string]any `json:"variables"`
		Version   int            `json:"version"`
	}
	if err := decodeJSON(r, &in); err != nil {
		return err
	}
	if in.Version < 0 {
		return apperr.Field("version", "The version must be a version number (1, 2, ...).")
	}
	d, err := s.Domains.Owned(r.Context(), p.AccountID, r.PathValue("domain"))
	if err != nil {
		return err
	}
	t, c, err := s.Templates.Load(r.Context(), d.ID, r.PathValue("name"), in.Version)
	if err != nil {
		return err
	}
	out, err := c.Render(in.Variables)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, map[string]any{"success": true, "data": map[string]any{"name": t.Name, "version": t.Version,
		"subject": out.Subject, "html": out.HTML, "text": out.Text}})
	return nil
}
