package httpapi_test

import (
	"strings"
	"testing"

	"github.com/postline/postline/internal/apitest"
	"github.com/postline/postline/internal/httpapi"
)

// Every registered route must be documented, and every documented
// operation must exist.
func TestEveryRouteIsInOpenAPI(t *testing.T) {
	t.Parallel()
	doc := apitest.Spec(t)
	srv := httpapi.New(httpapi.Deps{})
	registered := map[string]bool{}
	for _, r := range srv.Routes() {
		registered[r] = true
		method, path, _ := strings.Cut(r, " ")
		item := doc.Paths.Find(path)
		if item == nil || item.GetOperation(method) == nil {
			t.Errorf("route %s is not in openapi.yaml", r)
		}
	}
	for path, item := range doc.Paths.Map() {
		for method := range item.Operations() {
			if !registered[method+" "+path] {
				t.Errorf("openapi.yaml documents %s %s, which is not registered", method, path)
			}
		}
	}
}
