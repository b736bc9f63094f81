package mailforward

import (
	"strings"

	"github.com/postline/postline/internal/sending"
)

// The forward marks: every forward adds `X-Postline-Forwarded-By:
// ROUTE@DOMAIN` (the route's id, the receiving domain) on top of what it
// passes on, and the sending intake's forward mode keeps the marks a
// message came with. A message that carries the route's mark already went
// through it: forwarding it again is a loop.

// markOf is the mark route rt adds for the receiving domain.
func markOf(routeID, domainName string) field {
	return newField(sending.ForwardMarkHeader, strings.ToLower(routeID)+"@"+domainName)
}

// marks are the message's forward marks.
func marks(m message) []string { return m.values(sending.ForwardMarkHeader) }

// passedThrough reports a mark of the route among marks, whatever its
// domain: the same route may forward mail of several of its account's
// domains, and a message back at any of them is back at the route.
func passedThrough(marks []string, routeID string) bool {
	for _, v := range marks {
		id, _, _ := strings.Cut(strings.TrimSpace(v), "@")
		if strings.EqualFold(id, routeID) {
			return true
		}
	}
	return false
}
