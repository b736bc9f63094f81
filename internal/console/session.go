package console

import (
	"crypto/subtle"
	"errors"
	"net/http"
	"net/url"

	"github.com/postline/postline/internal/account"
	"github.com/postline/postline/internal/apperr"
)

// cookieName is the session cookie. The __Host- prefix (Secure only) pins
// it to this host and path /.
func (c *Console) cookieName() string {
	if c.cfg.SecureCookies {
		return "__Host-postline"
	}
	return "postline"
}

func (c *Console) setSessionCookie(w http.ResponseWriter, token string) {
	ck := &http.Cookie{Name: c.cookieName(), Value: token, Path: "/", HttpOnly: true, Secure: c.cfg.SecureCookies,
		SameSite: http.SameSiteStrictMode}
	if token == "" {
		ck.MaxAge = -1
	}
	http.SetCookie(w, ck)
}

// session returns the request's session; ok is false when signed out
// (or the session ended: idle, account disabled, key revoked). err is a
// session the server could not read (the database down): the reader is
// still signed in, and must not be shown the sign-in form.
func (c *Console) session(r *http.Request) (s account.Session, ok bool, err error) {
	ck, err := r.Cookie(c.cookieName())
	if err != nil {
		return account.Session{}, false, nil
	}
	ctx, cancel := c.ctx(r)
	defer cancel()
	s, err = c.deps.Sessions.Resume(ctx, ck.Value)
	switch {
	case err == nil:
		return s, true, nil
	case apperr.CodeOf(err) == apperr.Unauthorized:
		return account.Session{}, false, nil
	default:
		return account.Session{}, false, err
	}
}

type pageFunc func(w http.ResponseWriter, r *http.Request, s *account.Session) error

// page serves a GET page; signed out, every page is the sign-in form
// (answered 401 except at /), which brings the reader back after.
func (c *Console) page(fn pageFunc) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s, ok, err := c.session(r)
		if err != nil {
			c.fail(w, r, nil, err)
			return
		}
		if !ok {
			status := http.StatusUnauthorized
			if r.URL.Path == "/" {
				status = http.StatusOK
			}
			c.render(w, status, "signin", view{Title: "Sign in", Data: map[string]any{"Next": r.URL.RequestURI()}})
			return
		}
		if err := fn(w, r, &s); err != nil {
			c.fail(w, r, &s, err)
		}
	})
}

// errForbidden is a state-changing request without a valid CSRF token or
// from another origin.
var errForbidden = errors.New("forbidden")

// maxFormMemory is how much of an uploaded file a form keeps in memory.
const maxFormMemory = 1 << 20

// form serves a POST from a signed-in page: same origin, right CSRF token.
func (c *Console) form(fn pageFunc) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s, ok, err := c.session(r)
		if err != nil {
			c.fail(w, r, nil, err)
			return
		}
		if !ok {
			http.Redirect(w, r, "/", http.StatusSeeOther)
			return
		}
		// Parsing the form first: files past a mebibyte wait in temporary
		// files (net/http removes them after the request), not in memory.
		if tooLarge(r) {
			c.render(w, http.StatusRequestEntityTooLarge, "notfound", view{Title: "Too large", Session: &s,
				Data: map[string]any{"Message": "This form is larger than the server accepts (a list upload: at most 64 MiB)."}})
			return
		}
		if !sameOrigin(r) || !validCSRF(r, s.CSRF) {
			c.render(w, http.StatusForbidden, "notfound", view{Title: "Forbidden", Session: &s,
				Data: map[string]any{"Message": "This form could not be accepted: reload the page and try again."}})
			return
		}
		if err := fn(w, r, &s); err != nil {
			c.fail(w, r, &s, err)
		}
	})
}

// sameOrigin refuses requests a browser marks as coming from another
// site. A request with neither header (a script, an old browser) still
// needs the CSRF token, which only our pages carry.
func sameOrigin(r *http.Request) bool {
	switch r.Header.Get("Sec-Fetch-Site") {
	case "", "same-origin", "none":
	default:
		return false
	}
	if o := r.Header.Get("Origin"); o != "" && o != "null" {
		u, err := url.Parse(o)
		if err != nil || u.Host != r.Host {
			return false
		}
	} else if o == "null" {
		return false
	}
	return true
}

// tooLarge parses the form and reports a body cut at its limit (set where
// the console is mounted), which would otherwise read as a missing CSRF
// token.
func tooLarge(r *http.Request) bool {
	var mbe *http.MaxBytesError
	return errors.As(r.ParseMultipartForm(maxFormMemory), &mbe)
}

func validCSRF(r *http.Request, want string) bool {
	got := r.PostFormValue("csrf")
	if got == "" {
		got = r.Header.Get("X-CSRF-Token")
	}
	return got != "" && subtle.ConstantTimeCompare([]byte(got), []byte(want)) == 1
}

// localPath keeps a return path only when it stays on this site: a
// single leading slash, no scheme, no host, no backslash tricks.
func localPath(p string) string {
	if p == "" || p[0] != '/' || len(p) > 1 && (p[1] == '/' || p[1] == '\\') {
		return "/"
	}
	u, err := url.Parse(p)
	if err != nil || u.Scheme != "" || u.Host != "" {
		return "/"
	}
	return u.RequestURI()
}
