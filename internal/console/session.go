package console

import (
	"crypto/subtle"
	"errors"
	"net/http"
	"net/url"
	"time"

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
// (or the session ended: idle, account disabled, key revoked), and ended
// then says why when the browser still named a session (an
// account.EndedError reason, or endedGone; "" when it named none). err is
// a session the server could not read (the database down): the reader is
// still signed in, and must not be shown the sign-in form.
func (c *Console) session(r *http.Request) (s account.Session, ok bool, ended string, err error) {
	ck, err := r.Cookie(c.cookieName())
	if err != nil {
		return account.Session{}, false, "", nil
	}
	ctx, cancel := c.ctx(r)
	defer cancel()
	s, err = c.deps.Sessions.Resume(ctx, ck.Value)
	var e *account.EndedError
	switch {
	case err == nil:
		return s, true, "", nil
	case errors.As(err, &e):
		return account.Session{}, false, e.Why, nil
	case apperr.CodeOf(err) == apperr.Unauthorized:
		return account.Session{}, false, endedGone, nil
	default:
		return account.Session{}, false, "", err
	}
}

// endedGone is a session the browser names that is not stored (signed
// out elsewhere, or pruned after its idle timeout).
const endedGone = "gone"

// endedText says why a session ended, for the sign-in page ("" for a
// reason it does not know).
func (c *Console) endedText(why string) string {
	switch why {
	case endedGone:
		return "Your session has ended (signed out elsewhere, removed from the account's members, or unused for too long). Sign in again."
	case account.EndedIdle:
		return "Your session ended after " + durationText(c.deps.Sessions.IdleTimeout()) + " without use. Sign in again."
	case account.EndedDisabled:
		return "Your session ended: an operator disabled the account."
	case account.EndedRevoked:
		return "Your session ended: the API key it was started with was revoked. Sign in with another key or your password."
	case account.EndedExpired:
		return "Your session ended: the API key it was started with expired. Sign in with another key or your password."
	}
	return ""
}

// durationText writes a timeout as people say it: "12 hours", "30 minutes".
func durationText(d time.Duration) string {
	switch {
	case d >= time.Hour && d%time.Hour == 0:
		return plural(int64(d/time.Hour), "hour", "hours")
	case d >= time.Minute && d%time.Minute == 0:
		return plural(int64(d/time.Minute), "minute", "minutes")
	}
	return d.String()
}

// signInAgain answers a page request without a session: the sign-in form
// (401, except at /), saying why a session the browser named is over; its
// cookie is cleared, so that this is said once. A form posted after its
// session ended comes here with the reason as ?ended= (a code, not text:
// a link cannot make the page say anything else).
func (c *Console) signInAgain(w http.ResponseWriter, r *http.Request, ended string) {
	status := http.StatusUnauthorized
	if r.URL.Path == "/" {
		status = http.StatusOK
	}
	if ended == "" || ended == endedGone {
		if why := r.URL.Query().Get("ended"); c.endedText(why) != "" {
			ended = why
		}
	}
	if ended != "" {
		c.setSessionCookie(w, "")
	}
	next := r.URL.RequestURI()
	if r.URL.Path == "/" {
		next = "/"
	}
	c.render(w, r, status, "signin", view{Title: "Sign in", Data: map[string]any{"Next": next, "Ended": c.endedText(ended)}})
}

type pageFunc func(w http.ResponseWriter, r *http.Request, s *account.Session) error

// page serves a GET page; signed out, every page is the sign-in form
// (answered 401 except at /), which brings the reader back after.
func (c *Console) page(fn pageFunc) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s, ok, ended, err := c.session(r)
		if err != nil {
			c.fail(w, r, nil, err)
			return
		}
		if !ok {
			c.signInAgain(w, r, ended)
			return
		}
		r = withFlash(r, c.takeFlash(w, r))
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
		s, ok, ended, err := c.session(r)
		if err != nil {
			c.fail(w, r, nil, err)
			return
		}
		if !ok {
			to := "/"
			if ended != "" { // the sign-in page says why
				to = "/?ended=" + url.QueryEscape(ended)
			}
			http.Redirect(w, r, to, http.StatusSeeOther)
			return
		}
		// Parsing the form first: files past a mebibyte wait in temporary
		// files (net/http removes them after the request), not in memory.
		if tooLarge(r) {
			c.render(w, r, http.StatusRequestEntityTooLarge, "notfound", view{Title: "Too large", Session: &s,
				Data: map[string]any{"Message": "This form is larger than the server accepts (a list upload: at most 64 MiB)."}})
			return
		}
		if !sameOrigin(r) || !validCSRF(r, s.CSRF) {
			c.render(w, r, http.StatusForbidden, "notfound", view{Title: "Forbidden", Session: &s,
				Data: map[string]any{"Message": "This form could not be accepted: reload the page and try again."}})
			return
		}
		if !s.MayChange() && r.URL.Path != "/sign-out" { // a viewer changes nothing
			c.readOnlyRefusal(w, r, &s)
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
