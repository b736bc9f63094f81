package console

import (
	"bytes"
	"net"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/postline/postline/internal/account"
	"github.com/postline/postline/internal/apperr"
	"github.com/postline/postline/internal/ratelimit"
)

// view is what every page template gets.
type view struct {
	Title   string
	Session *account.Session
	Data    map[string]any
	// Flash is what the form posted before this page said (the layout
	// shows its notice; a page shows its secret).
	Flash flash
}

// CanChange says whether the page shows its forms: a viewer's show none
// (their POSTs would be refused).
func (v view) CanChange() bool { return v.Session != nil && v.Session.MayChange() }

func (c *Console) render(w http.ResponseWriter, r *http.Request, status int, page string, v view) {
	v.Flash = flashOf(r)
	var buf bytes.Buffer
	if err := c.pages[page].Execute(&buf, v); err != nil {
		c.cfg.Logger.Error("console: rendering", "page", page, "error", err)
		http.Error(w, "Internal server error", http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(status)
	w.Write(buf.Bytes()) //nolint:errcheck // the client may be gone
}

// fail shows a service error as a page: another account's domain is the
// same 404 as a missing one, as in the API, and a fault answers what it is
// (a database down or too slow 503 with Retry-After, a full disk 507), as
// the API does, so a reader knows to retry rather than report a bug.
func (c *Console) fail(w http.ResponseWriter, r *http.Request, s *account.Session, err error) {
	err = apperr.Classify(err)
	switch apperr.CodeOf(err) {
	case apperr.NotFound:
		c.render(w, r, http.StatusNotFound, "notfound", view{Title: "Not found", Session: s,
			Data: map[string]any{"Message": "There is nothing here, or it is not yours."}})
	case apperr.RateLimited: // a bound such as --log-exports-per-account: its message names it
		if e, ok := apperr.As(err); ok && e.RetryAfter > 0 {
			w.Header().Set("Retry-After", strconv.Itoa(e.RetryAfter))
		}
		c.render(w, r, http.StatusTooManyRequests, "notfound", view{Title: "Too many at once", Session: s,
			Data: map[string]any{"Message": faultMessage(err)}})
	case apperr.Unavailable:
		c.cfg.Logger.Warn("console: page unavailable", "path", r.URL.Path, "error", err)
		w.Header().Set("Retry-After", strconv.Itoa(retryAfterUnavailable))
		c.render(w, r, http.StatusServiceUnavailable, "notfound", view{Title: "Unavailable", Session: s,
			Data: map[string]any{"Message": faultMessage(err)}})
	case apperr.InsufficientStorage:
		c.cfg.Logger.Error("console: disk full", "path", r.URL.Path, "error", err)
		c.render(w, r, http.StatusInsufficientStorage, "notfound", view{Title: "Disk full", Session: s,
			Data: map[string]any{"Message": faultMessage(err)}})
	default:
		c.cfg.Logger.Error("console: page failed", "path", r.URL.Path, "error", err)
		c.render(w, r, http.StatusInternalServerError, "notfound", view{Title: "Error", Session: s,
			Data: map[string]any{"Message": "Something went wrong on the server; it has been logged."}})
	}
}

// retryAfterUnavailable is the Retry-After of a 503, in seconds, the API's.
const retryAfterUnavailable = 5

// faultMessage is the message apperr.Classify gave a fault: it names the
// cause and never the driver's text.
func faultMessage(err error) string {
	if e, ok := apperr.As(err); ok && e.Message != "" {
		return e.Message
	}
	return "The server cannot answer right now; retry later."
}

func (c *Console) notFound(w http.ResponseWriter, r *http.Request, s *account.Session) error {
	return apperr.Errorf(apperr.NotFound, "no page %s", r.URL.Path)
}

func clientIP(r *http.Request) string {
	host, _, err := net.SplitHostPort(r.RemoteAddr)
	if err != nil {
		return r.RemoteAddr
	}
	return host
}

// signIn takes a login with an API key or with the account's console
// password. Failures count against the login and the address (the same
// limits as SMTP AUTH); past them nothing is checked.
func (c *Console) signIn(w http.ResponseWriter, r *http.Request) {
	if !sameOrigin(r) {
		http.Error(w, "Forbidden", http.StatusForbidden)
		return
	}
	ctx, cancel := c.ctx(r)
	defer cancel()
	// Anyone may post here: the form is small and must arrive quickly, or
	// net/http would keep 32 MiB of a multipart body in memory per request
	// (20 unfinished 40 MiB sign-ins took 2 GiB: the third outside review).
	r.Body = http.MaxBytesReader(w, r.Body, maxSignInBytes)
	http.NewResponseController(w).SetReadDeadline(time.Now().Add(signInReadTime)) //nolint:errcheck // bounded by ReadTimeout anyway
	if err := r.ParseForm(); err != nil || strings.HasPrefix(r.Header.Get("Content-Type"), "multipart/") {
		http.Error(w, "The sign-in form is at most 64 KiB, URL-encoded, sent within 10 s.", http.StatusBadRequest)
		return
	}
	login, secret := strings.TrimSpace(r.PostFormValue("login")), r.PostFormValue("secret")
	next := localPath(r.PostFormValue("next"))
	again := func(status int, msg string) {
		c.render(w, r, status, "signin", view{Title: "Sign in", Data: map[string]any{"Next": next, "Login": login, "Error": msg}})
	}
	ip := clientIP(r)
	isKey := strings.HasPrefix(secret, "pl_")
	var at ratelimit.Attempt
	if a := c.deps.Attempts; a != nil {
		// A password is counted against its login too (it may be weak); an
		// API key only against the address: it cannot be guessed, and a
		// login locked by someone's password guesses still signs in with it.
		counted := login
		if isKey {
			counted = ""
		}
		var err error
		if at, err = a.Begin(ctx, counted, ip); err != nil {
			c.cfg.Logger.Warn("console: sign-in attempts could not be counted", "error", err)
		}
		if at.Blocked {
			again(http.StatusTooManyRequests, "Too many failed sign-ins; try again in a few minutes.")
			return
		}
	}
	var p account.Principal
	var err error
	switch {
	case isKey:
		p, err = c.deps.Accounts.Authenticate(ctx, login, secret)
	case strings.Contains(login, "@") && c.deps.Team != nil: // a member: logins have no @
		p, err = c.deps.Team.CheckPassword(ctx, login, secret)
	default:
		p, err = c.deps.Accounts.CheckPassword(ctx, login, secret)
	}
	switch apperr.CodeOf(err) {
	case "":
		at.Succeeded(ctx) //nolint:errcheck // signed in either way
	case apperr.Unauthorized, apperr.AuthMissing:
		at.Failed() // counted by Begin
		again(http.StatusUnauthorized, "The login, API key or password is not right, or the account is disabled.")
		return
	case apperr.RateLimited:
		at.Uncounted(ctx) //nolint:errcheck // nothing was checked
		w.Header().Set("Retry-After", strconv.Itoa(int(account.PasswordCheckWait/time.Second)))
		again(http.StatusTooManyRequests, "Too many sign-ins are being checked right now; try again in a few seconds.")
		return
	default:
		at.Uncounted(ctx) //nolint:errcheck // nothing was checked
		c.signInFault(w, r, next, login, err)
		return
	}
	if !p.Full() {
		// The console offers every page; a limited key stays an API key.
		again(http.StatusForbidden, "This API key is limited to some scopes or domains; sign in with a key that has every scope, or with the password.")
		return
	}
	token, _, err := c.deps.Sessions.Start(ctx, p)
	if err != nil {
		c.signInFault(w, r, next, login, err)
		return
	}
	c.setSessionCookie(w, token)
	http.Redirect(w, r, next, http.StatusSeeOther)
}

// The sign-in form's bounds: what a login and a key or password need.
const (
	maxSignInBytes = 64 << 10
	signInReadTime = 10 * time.Second
)

// signInFault answers a sign-in the server could not check: the form
// again, with the fault's status and cause (503 and Retry-After while the
// database is down, 507 on a full disk, else 500).
func (c *Console) signInFault(w http.ResponseWriter, r *http.Request, next, login string, err error) {
	err = apperr.Classify(err)
	status, msg := http.StatusInternalServerError, "Signing in failed on the server; try again."
	switch apperr.CodeOf(err) {
	case apperr.Unavailable:
		status, msg = http.StatusServiceUnavailable, faultMessage(err)
		w.Header().Set("Retry-After", strconv.Itoa(retryAfterUnavailable))
	case apperr.InsufficientStorage:
		status, msg = http.StatusInsufficientStorage, faultMessage(err)
	}
	c.cfg.Logger.Error("console: sign-in", "path", r.URL.Path, "error", err)
	c.render(w, r, status, "signin", view{Title: "Sign in", Data: map[string]any{"Next": next, "Login": login, "Error": msg}})
}

func (c *Console) signOut(w http.ResponseWriter, r *http.Request, s *account.Session) error {
	if ck, err := r.Cookie(c.cookieName()); err == nil {
		if err := c.deps.Sessions.End(r.Context(), ck.Value); err != nil {
			return err
		}
	}
	c.setSessionCookie(w, "")
	http.Redirect(w, r, "/", http.StatusSeeOther)
	return nil
}

func (c *Console) domainList(w http.ResponseWriter, r *http.Request, s *account.Session) error {
	doms, err := c.deps.Domains.List(r.Context(), s.AccountID)
	if err != nil {
		return err
	}
	c.render(w, r, http.StatusOK, "domains", view{Title: "Domains", Session: s, Data: map[string]any{"Domains": doms, "Form": map[string]string{}}})
	return nil
}

func (c *Console) domainPage(w http.ResponseWriter, r *http.Request, s *account.Session) error {
	d, err := c.deps.Domains.Owned(r.Context(), s.AccountID, r.PathValue("name"))
	if err != nil {
		return err
	}
	c.render(w, r, http.StatusOK, "domain", view{Title: d.Name, Session: s,
		Data: map[string]any{"Domain": d, "Records": c.deps.Domains.CheckedRecords(d), "Claim": d.ClaimStatus()}})
	return nil
}

// static serves the embedded assets under their hashed names, cached for
// ever: a new version has a new name.
func (c *Console) static(w http.ResponseWriter, r *http.Request) {
	a, ok := c.assets[r.URL.Path]
	if !ok {
		http.NotFound(w, r)
		return
	}
	w.Header().Set("Content-Type", a.contentType)
	w.Header().Set("Cache-Control", "public, max-age=31536000, immutable")
	w.Write(a.body) //nolint:errcheck // the client may be gone
}
