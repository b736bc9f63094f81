package httpapi

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"log/slog"
	"net/http"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/postline/postline/internal/account"
	"github.com/postline/postline/internal/apperr"
)

type ctxKey int

const requestIDKey ctxKey = 0

// withRequestID takes a sane X-Request-ID from the client or makes one, and
// echoes it, so a client's report can be matched with the server's log.
func (s *Server) withRequestID(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		id := r.Header.Get("X-Request-ID")
		if !saneID(id) {
			b := make([]byte, 8)
			rand.Read(b)
			id = hex.EncodeToString(b)
		}
		w.Header().Set("X-Request-ID", id)
		next.ServeHTTP(w, r.WithContext(context.WithValue(r.Context(), requestIDKey, id)))
	})
}

func saneID(id string) bool {
	if id == "" || len(id) > 64 {
		return false
	}
	for _, c := range id {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-' || c == '_') {
			return false
		}
	}
	return true
}

func requestID(ctx context.Context) string { id, _ := ctx.Value(requestIDKey).(string); return id }

// statusWriter remembers the status for logs and metrics. It keeps Flush
// reachable through Unwrap for http.ResponseController (the SSE stream).
type statusWriter struct {
	http.ResponseWriter
	status int
}

func (w *statusWriter) WriteHeader(code int) {
	if w.status == 0 {
		w.status = code
	}
	w.ResponseWriter.WriteHeader(code)
}

func (w *statusWriter) Write(b []byte) (int, error) {
	if w.status == 0 {
		w.status = http.StatusOK
	}
	return w.ResponseWriter.Write(b)
}

func (w *statusWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// wrap runs one route: body limit, authentication, rate limit, the
// handler, error mapping, then metrics and the access log.
func (s *Server) wrap(rt route) http.Handler {
	return http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) {
		start := time.Now()
		w := &statusWriter{ResponseWriter: rw}
		limit := rt.maxBody
		if limit == 0 {
			limit = s.Limits.MaxJSONBody
		}
		r.Body = http.MaxBytesReader(w, r.Body, limit)
		login, err := s.serve(w, r, rt)
		gone := err != nil && clientGone(r, err)
		if err != nil && !gone {
			s.writeError(w, r, rt, err)
		}
		status := w.status
		switch {
		case gone:
			// Nobody is left to answer: not a server error. 499 is nginx's
			// "client closed request", which log tools know.
			status, err = statusClientClosed, nil
		case status == 0:
			status = http.StatusOK
		}
		s.metrics.observe(rt.path, r.Method, status, time.Since(start))
		level := slog.LevelInfo
		if status >= 500 {
			level = slog.LevelError
		}
		attrs := []slog.Attr{slog.String("request_id", requestID(r.Context())), slog.String("method", r.Method),
			slog.String("path", r.URL.Path), slog.Int("status", status), slog.Duration("duration", time.Since(start))}
		if login != "" {
			attrs = append(attrs, slog.String("account", login))
		}
		if err != nil && status >= 500 {
			attrs = append(attrs, slog.String("error", err.Error()))
		}
		s.Logger.LogAttrs(r.Context(), level, "request", attrs...)
	})
}

func (s *Server) serve(w http.ResponseWriter, r *http.Request, rt route) (string, error) {
	if rt.public != nil {
		return "", rt.public(w, r)
	}
	auth := s.authenticate
	if rt.group == groupMailgun {
		auth = s.authenticateMailgun
	}
	p, err := auth(r)
	if err != nil {
		return "", err
	}
	if err := s.rateLimit(w, r, rt, p); err != nil {
		return p.Login, err
	}
	for _, a := range rt.alts {
		if a.take(r) {
			rt = a.route
			break
		}
	}
	if err := s.checkScope(r, rt, p); err != nil {
		return p.Login, err
	}
	err = rt.handler(w, r, p)
	if err == nil && rt.audit != "" {
		s.recordAPI(w, r, rt, p)
	}
	return p.Login, err
}

// Messages for authentication failures; tests and clients match on them.
const (
	msgAuthRequired = "Authorization header is required"
	msgAuthInvalid  = "Authorization header is invalid"
	// msgAuthScheme answers another scheme (Bearer, Token ...), which
	// clients of other services send by habit.
	msgAuthScheme = msgAuthInvalid + ": use Basic authentication with LOGIN:API_KEY (curl -u LOGIN:API_KEY)"
)

func (s *Server) authenticate(r *http.Request) (account.Principal, error) {
	h := r.Header.Get("Authorization")
	if h == "" {
		return account.Principal{}, apperr.Errorf(apperr.Unauthorized, msgAuthRequired)
	}
	scheme, cred, _ := strings.Cut(h, " ")
	if !strings.EqualFold(scheme, "Basic") {
		return account.Principal{}, apperr.Errorf(apperr.Unauthorized, msgAuthScheme)
	}
	raw, err := base64.StdEncoding.DecodeString(strings.TrimSpace(cred))
	if err != nil {
		return account.Principal{}, apperr.Errorf(apperr.Unauthorized, msgAuthInvalid)
	}
	login, key, ok := strings.Cut(string(raw), ":")
	if !ok || login == "" || key == "" {
		return account.Principal{}, apperr.Errorf(apperr.Unauthorized, msgAuthInvalid)
	}
	return s.Accounts.Authenticate(r.Context(), login, key)
}

// rateLimit counts the request against the account's budget for the
// group's window and sets the X-RateLimit headers on every answer. A
// failing counter store lets the request through: an outage of the
// counters should not take the API down with it.
func (s *Server) rateLimit(w http.ResponseWriter, r *http.Request, rt route, p account.Principal) error {
	limit, window, name := s.Limits.DomainPerMinute, time.Minute, "domain"
	if rt.group == groupValidation || rt.hourly {
		limit, window, name = s.Limits.ValidationPerHour, time.Hour, "validation"
	}
	res, err := s.Limiter.Allow(r.Context(), name+":"+strconv.FormatInt(p.AccountID, 10), limit, window)
	if err != nil {
		s.Logger.Warn("rate limiter unavailable; allowing request", "error", err, "request_id", requestID(r.Context()))
		res.Limit, res.Remaining, res.Allowed = limit, limit, true
	}
	w.Header().Set("X-RateLimit-Limit", strconv.Itoa(res.Limit))
	w.Header().Set("X-RateLimit-Remaining", strconv.Itoa(res.Remaining))
	if !res.Allowed {
		return &rateLimited{retryAfter: res.RetryAfter(s.Limiter.Now())}
	}
	return nil
}

// rateLimited carries Retry-After to writeError; msg, when set, replaces
// the window's message (for limits other than the request budget).
type rateLimited struct {
	retryAfter int
	msg        string
}

func (e *rateLimited) Error() string {
	if e.msg != "" {
		return e.msg
	}
	return "Too many requests. Try again in " + strconv.Itoa(e.retryAfter) + " seconds."
}

// statusClientClosed is logged and counted for a request whose client went
// away before its answer.
const statusClientClosed = 499

// clientGone reports whether err is the consequence of the client hanging
// up: its request's context ended (the server cancels it when the
// connection closes), or writing to it failed.
func clientGone(r *http.Request, err error) bool {
	if errors.Is(r.Context().Err(), context.Canceled) {
		return true
	}
	return errors.Is(err, syscall.EPIPE) || errors.Is(err, syscall.ECONNRESET)
}
