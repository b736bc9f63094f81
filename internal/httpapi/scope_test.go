package httpapi

import "testing"

// A route added without a scope would be open to every limited key.
func TestEveryAuthenticatedRouteHasAScope(t *testing.T) {
	t.Parallel()
	s := New(Deps{})
	for _, rt := range s.routes {
		if rt.handler != nil && rt.scope == "" && !rt.operator {
			t.Errorf("%s %s has neither a scope nor operator: true", rt.method, rt.path)
		}
	}
}
