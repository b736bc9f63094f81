package apitest

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"sync"
	"testing"

	"github.com/getkin/kin-openapi/openapi3"
	"github.com/getkin/kin-openapi/openapi3filter"
	"github.com/getkin/kin-openapi/routers"
	"github.com/getkin/kin-openapi/routers/legacy"

	"github.com/postline/postline/internal/httpapi"
)

type spec struct {
	doc    *openapi3.T
	router routers.Router
}

var specOnce = sync.OnceValues(func() (*spec, error) {
	raw, err := httpapi.OpenAPIDocument()
	if err != nil {
		return nil, err
	}
	doc, err := openapi3.NewLoader().LoadFromData(raw)
	if err != nil {
		return nil, err
	}
	if err := doc.Validate(context.Background()); err != nil {
		return nil, err
	}
	doc.Servers = nil // match any host
	// The unsubscribe pages are HTML; their schema is a string.
	openapi3filter.RegisterBodyDecoder("text/html", openapi3filter.PlainBodyDecoder)
	// A stored message's raw bytes; its schema is a string too.
	openapi3filter.RegisterBodyDecoder("message/rfc822", openapi3filter.PlainBodyDecoder)
	// A log export in NDJSON: its schema is a string (the test parses the lines).
	openapi3filter.RegisterBodyDecoder("application/x-ndjson", openapi3filter.PlainBodyDecoder)
	r, err := legacy.NewRouter(doc)
	if err != nil {
		return nil, err
	}
	return &spec{doc: doc, router: r}, nil
})

func loadSpec(t testing.TB) *spec {
	s, err := specOnce()
	if err != nil {
		t.Fatalf("OpenAPI document: %v", err)
	}
	return s
}

// Spec returns the parsed, validated OpenAPI document.
func Spec(t testing.TB) *openapi3.T { return loadSpec(t).doc }

// validate checks that the route is documented and that the response's
// status, headers and body match the document.
func (s *spec) validate(req *http.Request, reqBody []byte, resp *http.Response, body []byte) error {
	r := req.Clone(context.Background())
	r.Body = io.NopCloser(bytes.NewReader(reqBody))
	route, params, err := s.router.FindRoute(r)
	if err != nil {
		if resp.StatusCode == http.StatusNotFound || resp.StatusCode == http.StatusMethodNotAllowed {
			return nil // an undocumented path answered "no such route": fine
		}
		return err
	}
	in := &openapi3filter.RequestValidationInput{Request: r, PathParams: params, Route: route,
		Options: &openapi3filter.Options{ExcludeRequestBody: true, AuthenticationFunc: openapi3filter.NoopAuthenticationFunc}}
	out := &openapi3filter.ResponseValidationInput{RequestValidationInput: in, Status: resp.StatusCode,
		Header: resp.Header, Body: io.NopCloser(bytes.NewReader(body)),
		Options: &openapi3filter.Options{IncludeResponseStatus: true, MultiError: true}}
	return openapi3filter.ValidateResponse(context.Background(), out)
}
