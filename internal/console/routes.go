package console

import "net/http"

type consoleRoute struct {
	pattern string
	handler http.Handler
}

// routes is every page of the console: who may see it is in the wrapper
// (public, or signed in; POSTs also need the CSRF token).
func (c *Console) routes() []consoleRoute {
	return []consoleRoute{
		{"GET /{$}", c.page(c.overview)},
		{"POST /sign-in", http.HandlerFunc(c.signIn)},
		{"POST /sign-out", c.form(c.signOut)},
		{"GET /domains", c.page(c.domainList)},
		{"GET /domains/{name}", c.page(c.domainPage)},
		{"GET /domains/{name}/log", c.page(c.logPage)},
		{"GET /domains/{name}/messages/{id}", c.page(c.chainPage)},
		{"GET /static/{file}", http.HandlerFunc(c.static)},
		{"/", c.page(c.notFound)},
	}
}
