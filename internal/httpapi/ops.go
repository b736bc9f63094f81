package httpapi

import (
	_ "embed"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"sync"

	"github.com/getkin/kin-openapi/openapi3"

	"github.com/postline/postline/internal/account"
	"github.com/postline/postline/internal/apperr"
)

func (s *Server) handleHealthz(w http.ResponseWriter, r *http.Request) error {
	writeJSON(w, http.StatusOK, map[string]any{"status": "ok"})
	return nil
}

func (s *Server) handleMetrics(w http.ResponseWriter, r *http.Request) error {
	s.metrics.handler.ServeHTTP(w, r)
	return nil
}

// handleConsole hands the paths the API does not own to the console; an
// unknown /api/ or /t/ path stays the API's 404 (or 405).
func (s *Server) handleConsole(w http.ResponseWriter, r *http.Request) error {
	if strings.HasPrefix(r.URL.Path, "/api/") || strings.HasPrefix(r.URL.Path, "/t/") {
		return s.handleNotFound(w, r)
	}
	s.Console.ServeHTTP(w, r)
	return nil
}

func (s *Server) handleNotFound(w http.ResponseWriter, r *http.Request) error {
	if err := s.wrongMethod(r); err != nil {
		return err
	}
	return apperr.Errorf(apperr.NotFound, "No route for %s %s", r.Method, r.URL.Path)
}

// handleMailgunNoRoute answers a path under /v3/ or /v4/ that no route
// has, once the caller's Mailgun credentials are checked.
func (s *Server) handleMailgunNoRoute(w http.ResponseWriter, r *http.Request, _ account.Principal) error {
	if err := s.wrongMethod(r); err != nil {
		return err
	}
	return apperr.Errorf(apperr.NotFound, "Not Found: no route for %s %s", r.Method, r.URL.Path)
}

// methodNotAllowed is a known path asked with a method it does not take
// (405 with Allow, in the error shape of the path's group).
type methodNotAllowed struct {
	method string
	allow  []string
	group  group
}

func (e *methodNotAllowed) Error() string {
	return fmt.Sprintf("Method %s is not allowed here; use %s", e.method, strings.Join(e.allow, " or "))
}

// wrongMethod asks the router which other methods the path has, so a
// known path with the wrong method is a 405 rather than a 404.
func (s *Server) wrongMethod(r *http.Request) error {
	e := &methodNotAllowed{method: r.Method}
	for _, m := range []string{"GET", "HEAD", "POST", "PUT", "PATCH", "DELETE"} {
		if m == r.Method {
			continue
		}
		_, pattern := s.mux.Handler(&http.Request{Method: m, Host: r.Host, URL: r.URL})
		if !strings.Contains(pattern, " ") { // a catch-all ("/", "/v3/"), not a route
			continue
		}
		e.allow = append(e.allow, m)
		for _, rt := range s.routes {
			if rt.method+" "+rt.path == pattern {
				e.group = rt.group
			}
		}
	}
	if len(e.allow) == 0 {
		return nil
	}
	return e
}

//go:embed openapi.yaml
var openAPIYAML []byte

var openAPIJSON = sync.OnceValues(func() ([]byte, error) {
	doc, err := openapi3.NewLoader().LoadFromData(openAPIYAML)
	if err != nil {
		return nil, err
	}
	return json.Marshal(doc)
})

// OpenAPIDocument returns the embedded OpenAPI document as JSON.
func OpenAPIDocument() ([]byte, error) { return openAPIJSON() }

func (s *Server) handleOpenAPI(w http.ResponseWriter, r *http.Request) error {
	doc, err := openAPIJSON()
	if err != nil {
		return err
	}
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "public, max-age=300")
	_, err = w.Write(doc)
	return err
}
