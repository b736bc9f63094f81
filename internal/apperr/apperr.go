// Package apperr is the one application error type. Capability packages
// return *Error with a Code; only httpapi turns codes into HTTP statuses and
// body shapes, and the CLI turns them into exit statuses.
package apperr

import (
	"errors"
	"fmt"
	"sort"
	"strings"
)

// Code classifies an error by what the caller can do about it.
type Code string

// The codes. Their HTTP mapping lives in httpapi/errors.go.
const (
	Invalid       Code = "invalid"       // the request is malformed; Fields names the culprits
	Unprocessable Code = "unprocessable" // well-formed but breaks a business rule
	NotFound      Code = "not_found"     // missing, or not the caller's (never distinguished)
	Unauthorized  Code = "unauthorized"  // credentials missing or wrong
	AuthMissing   Code = "auth_missing"  // credentials fine but the user is gone or disabled
	Conflict      Code = "conflict"      // already exists
	RateLimited   Code = "rate_limited"  // over the window's budget
	TooLarge      Code = "too_large"     // body or part over its size limit
	Unavailable   Code = "unavailable"   // a dependency is down or did not answer in time; retry later
	Forbidden     Code = "forbidden"     // authenticated, but not allowed (an operator's route)
	Internal      Code = "internal"      // a bug or an unexpected fault

	// InsufficientStorage: the disk (the database's or the data
	// directory's) is full; nothing was stored.
	InsufficientStorage Code = "insufficient_storage"
)

// Error is an application error. Message is safe to show to the client.
type Error struct {
	Code    Code
	Message string
	// Fields maps a request field to its problems, for Invalid errors.
	Fields map[string][]string
	// Err is the underlying cause; never shown to clients.
	Err error
	// RetryAfter, for RateLimited errors, is when the client may try again
	// (whole seconds; 0 when unknown): the Retry-After header.
	RetryAfter int
}

func (e *Error) Error() string {
	var b strings.Builder
	b.WriteString(e.Message)
	if len(e.Fields) > 0 {
		keys := make([]string, 0, len(e.Fields))
		for k := range e.Fields {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			fmt.Fprintf(&b, "; %s: %s", k, strings.Join(e.Fields[k], ", "))
		}
	}
	if e.Err != nil {
		fmt.Fprintf(&b, ": %v", e.Err)
	}
	return b.String()
}

func (e *Error) Unwrap() error { return e.Err }

// Errorf builds an *Error with a formatted client-safe message.
func Errorf(code Code, format string, args ...any) *Error {
	return &Error{Code: code, Message: fmt.Sprintf(format, args...)}
}

// Wrap builds an *Error that keeps err as its hidden cause.
func Wrap(code Code, err error, message string) *Error {
	return &Error{Code: code, Message: message, Err: err}
}

// Field returns an Invalid error for one field.
func Field(field, problem string) *Error {
	return &Error{Code: Invalid, Message: problem, Fields: map[string][]string{field: {problem}}}
}

// FieldErrors collects per-field problems; its Err method returns nil when
// nothing was added, so validation code can end with `return fe.Err()`.
type FieldErrors map[string][]string

// Add records a problem for field.
func (f FieldErrors) Add(field, problem string) { f[field] = append(f[field], problem) }

// Err returns an Invalid *Error with message "Invalid request parameters", or nil.
func (f FieldErrors) Err() error { return f.ErrMessage("Invalid request parameters") }

// ErrMessage is Err with a chosen summary message.
func (f FieldErrors) ErrMessage(message string) error {
	if len(f) == 0 {
		return nil
	}
	return &Error{Code: Invalid, Message: message, Fields: f}
}

// CodeOf returns err's Code, Internal for errors that are not *Error, and ""
// for nil.
func CodeOf(err error) Code {
	if err == nil {
		return ""
	}
	var e *Error
	if errors.As(err, &e) {
		return e.Code
	}
	return Internal
}

// As returns err as *Error when it is one.
func As(err error) (*Error, bool) {
	var e *Error
	ok := errors.As(err, &e)
	return e, ok
}
