package apitest

import (
	"net/http"
	"net/http/httptest"
	"testing"
)

// The response check must be able to fail, or every e2e test's OpenAPI
// assertion is hollow.
func TestSpecRejectsUndocumentedResponses(t *testing.T) {
	t.Parallel()
	s := loadSpec(t)
	req := httptest.NewRequest("GET", "http://127.0.0.1/api/domains", nil)
	resp := func(status int) *http.Response {
		return &http.Response{StatusCode: status, Header: http.Header{"Content-Type": {"application/json"}}}
	}
	for _, c := range []struct {
		name   string
		status int
		body   string
		ok     bool
	}{
		{"documented", 200, `{"success":true,"data":[]}`, true},
		{"wrong type", 200, `{"success":"yes","data":[]}`, false},
		{"missing field", 200, `{"success":true}`, false},
		{"undocumented status", 418, `{"success":false,"message":"teapot"}`, false},
		{"401 in the wrong shape", 401, `{"error":"x"}`, false},
	} {
		err := s.validate(req, nil, resp(c.status), []byte(c.body))
		if (err == nil) != c.ok {
			t.Errorf("%s: validate(%d %s) = %v, want ok=%v", c.name, c.status, c.body, err, c.ok)
		}
	}
}
