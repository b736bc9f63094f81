package httpapi

import (
	"context"
	_ "embed"
	"encoding/json"
	"net/http"
	"sync"
	"time"

	"github.com/getkin/kin-openapi/openapi3"

	"github.com/postline/postline/internal/apperr"
)

func (s *Server) handleHealthz(w http.ResponseWriter, r *http.Request) error {
	writeJSON(w, http.StatusOK, map[string]any{"status": "ok"})
	return nil
}

// handleReadyz answers 200 only when the database answers within 2 s, so a
// load balancer stops sending traffic to a process that lost its database.
func (s *Server) handleReadyz(w http.ResponseWriter, r *http.Request) error {
	ctx, cancel := context.WithTimeout(r.Context(), 2*time.Second)
	defer cancel()
	if err := s.DB.Ping(ctx); err != nil {
		writeJSON(w, http.StatusServiceUnavailable, map[string]any{"status": "unavailable", "database": "unreachable"})
		return nil
	}
	writeJSON(w, http.StatusOK, map[string]any{"status": "ok", "database": "ok"})
	return nil
}

func (s *Server) handleMetrics(w http.ResponseWriter, r *http.Request) error {
	s.metrics.handler.ServeHTTP(w, r)
	return nil
}

func (s *Server) handleNotFound(w http.ResponseWriter, r *http.Request) error {
	return apperr.Errorf(apperr.NotFound, "No route for %s %s", r.Method, r.URL.Path)
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
