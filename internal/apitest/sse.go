package apitest

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strings"

	"github.com/getkin/kin-openapi/openapi3filter"
)

// SSE is an open text/event-stream response, read event by event with a
// parser that follows the WHATWG Server-Sent Events rules: fields are
// "name: value" lines (one optional space after the colon), lines starting
// with ":" are comments, data lines accumulate joined by "\n", and a blank
// line dispatches the event (an event with no data is not dispatched).
type SSE struct {
	Resp        *http.Response
	r           *bufio.Reader
	LastEventID string   // as a reconnecting EventSource would send it
	Comments    []string // comment lines seen so far (heartbeats)
}

// SSEEvent is one dispatched event.
type SSEEvent struct {
	Type string // "message" when the stream named none
	ID   string // the last event id at dispatch
	Data string
}

// OpenStream sends r with ctx (cancel it to disconnect). A 200
// text/event-stream answer has its status and headers checked against the
// OpenAPI document and is returned as an SSE; any other answer is read
// whole, checked like Do's, and returned as the Response.
func (e *Env) OpenStream(ctx context.Context, r Request) (*SSE, *Response) {
	e.t.Helper()
	req, err := http.NewRequestWithContext(ctx, r.Method, e.URL+r.Path, nil)
	if err != nil {
		e.t.Fatal(err)
	}
	for k, v := range r.Header {
		req.Header[k] = v
	}
	if r.Auth != "" {
		req.Header.Set("Authorization", r.Auth)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		e.t.Fatal(err)
	}
	if resp.StatusCode == http.StatusOK && strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream") {
		if err := e.spec.validateHead(req, resp); err != nil {
			e.t.Errorf("%s %s → %d: response does not match the OpenAPI document: %v", r.Method, r.Path, resp.StatusCode, err)
		}
		return &SSE{Resp: resp, r: bufio.NewReader(resp.Body)}, nil
	}
	defer resp.Body.Close()
	out := &Response{Response: resp}
	if out.Body, err = io.ReadAll(resp.Body); err != nil {
		e.t.Fatal(err)
	}
	if strings.HasPrefix(resp.Header.Get("Content-Type"), "application/json") && len(out.Body) > 0 && out.Body[0] == '{' {
		if err := json.Unmarshal(out.Body, &out.JSON); err != nil {
			e.t.Fatalf("%s %s: bad JSON %q: %v", r.Method, r.Path, out.Body, err)
		}
	}
	if err := e.spec.validate(req, nil, resp, out.Body); err != nil {
		e.t.Errorf("%s %s → %d: response does not match the OpenAPI document: %v\nbody: %s", r.Method, r.Path, resp.StatusCode, err, out.Body)
	}
	return nil, out
}

// validateHead checks a streamed response's status and headers; its body
// is read by the test as it arrives.
func (s *spec) validateHead(req *http.Request, resp *http.Response) error {
	r := req.Clone(context.Background())
	route, params, err := s.router.FindRoute(r)
	if err != nil {
		return err
	}
	in := &openapi3filter.RequestValidationInput{Request: r, PathParams: params, Route: route,
		Options: &openapi3filter.Options{ExcludeRequestBody: true, AuthenticationFunc: openapi3filter.NoopAuthenticationFunc}}
	return openapi3filter.ValidateResponse(context.Background(), &openapi3filter.ResponseValidationInput{
		RequestValidationInput: in, Status: resp.StatusCode, Header: resp.Header, Body: io.NopCloser(strings.NewReader("")),
		Options: &openapi3filter.Options{IncludeResponseStatus: true, MultiError: true, ExcludeResponseBody: true}})
}

// Next returns the next event, or an error when the stream ends (io.EOF)
// or the request's context is done.
func (s *SSE) Next() (SSEEvent, error) {
	var typ string
	var data bytes.Buffer
	hasData := false
	for {
		line, err := s.r.ReadString('\n')
		if err != nil {
			return SSEEvent{}, err
		}
		line = strings.TrimSuffix(strings.TrimSuffix(line, "\n"), "\r")
		if line == "" {
			if !hasData {
				typ = ""
				continue
			}
			if typ == "" {
				typ = "message"
			}
			return SSEEvent{Type: typ, ID: s.LastEventID, Data: strings.TrimSuffix(data.String(), "\n")}, nil
		}
		if strings.HasPrefix(line, ":") {
			s.Comments = append(s.Comments, line[1:])
			continue
		}
		name, value, _ := strings.Cut(line, ":")
		value = strings.TrimPrefix(value, " ")
		switch name {
		case "event":
			typ = value
		case "data":
			data.WriteString(value)
			data.WriteByte('\n')
			hasData = true
		case "id":
			if !strings.ContainsRune(value, 0) {
				s.LastEventID = value
			}
		}
	}
}

// Close disconnects.
func (s *SSE) Close() { s.Resp.Body.Close() }
