package httpapi

import (
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"

	"github.com/postline/postline/internal/apperr"
)

// status maps application codes to HTTP statuses. AuthMissing is 400 only
// in the {error} group (log, stream, send), as the document says.
func status(code apperr.Code, g group) int {
	switch code {
	case apperr.Invalid, apperr.Unprocessable:
		if g == groupMailgun {
			return http.StatusBadRequest
		}
		return http.StatusUnprocessableEntity
	case apperr.NotFound:
		return http.StatusNotFound
	case apperr.Unauthorized:
		return http.StatusUnauthorized
	case apperr.AuthMissing:
		if g == groupDomainLog {
			return http.StatusBadRequest
		}
		return http.StatusUnauthorized
	case apperr.Conflict:
		return http.StatusConflict
	case apperr.Forbidden:
		return http.StatusForbidden
	case apperr.RateLimited:
		return http.StatusTooManyRequests
	case apperr.TooLarge:
		return http.StatusRequestEntityTooLarge
	case apperr.Unavailable:
		return http.StatusServiceUnavailable
	case apperr.InsufficientStorage:
		return http.StatusInsufficientStorage
	default:
		return http.StatusInternalServerError
	}
}

// retryAfterUnavailable is the Retry-After of a 503, in seconds: long
// enough for a restarted database to come back, short enough that clients
// retry while a brief outage would have let them.
const retryAfterUnavailable = 5

// writeError is the one place an error becomes a response. Faults no
// service typed are classified by their cause first (a full disk is 507, a
// database down or too slow 503 with Retry-After); the rest are 500s that
// never show their text to clients.
func (s *Server) writeError(w http.ResponseWriter, r *http.Request, rt route, err error) {
	var rl *rateLimited
	if e, ok := apperr.As(err); ok && e.Code == apperr.RateLimited && e.RetryAfter > 0 {
		rl = &rateLimited{retryAfter: e.RetryAfter, msg: e.Message}
	}
	if rl != nil || errors.As(err, &rl) {
		w.Header().Set("Retry-After", strconv.Itoa(rl.retryAfter))
		body := map[string]any{"success": false, "message": rl.Error()}
		if rt.group == groupMailgun {
			body = map[string]any{"message": rl.Error()}
		}
		if rt.group == groupValidation {
			body["retry_after"] = rl.retryAfter
		}
		writeJSON(w, http.StatusTooManyRequests, body)
		return
	}
	var mna *methodNotAllowed
	if errors.As(err, &mna) {
		w.Header().Set("Allow", strings.Join(mna.allow, ", "))
		switch mna.group {
		case groupMailgun:
			writeJSON(w, http.StatusMethodNotAllowed, map[string]any{"message": mna.Error()})
		case groupDomainLog:
			writeJSON(w, http.StatusMethodNotAllowed, map[string]any{"error": mna.Error()})
		default:
			writeJSON(w, http.StatusMethodNotAllowed, map[string]any{"success": false, "message": mna.Error()})
		}
		return
	}
	var mbe *http.MaxBytesError
	if errors.As(err, &mbe) {
		msg := fmt.Sprintf("Request body exceeds the limit of %d bytes", mbe.Limit)
		err = &apperr.Error{Code: apperr.TooLarge, Message: msg, Fields: map[string][]string{"body": {msg}}}
	}
	e, ok := apperr.As(apperr.Classify(err))
	if !ok || e.Code == apperr.Internal {
		e = &apperr.Error{Code: apperr.Internal, Message: "Internal server error"}
	}
	code := status(e.Code, rt.group)
	switch code {
	case http.StatusUnauthorized:
		w.Header().Set("WWW-Authenticate", `Basic realm="postline", charset="UTF-8"`)
	case http.StatusServiceUnavailable:
		w.Header().Set("Retry-After", strconv.Itoa(retryAfterUnavailable))
	}
	switch {
	case rt.group == groupMailgun:
		writeJSON(w, code, map[string]any{"message": mailgunMessage(e)})
	case code == http.StatusUnauthorized && rt.group == groupDelete:
		writeJSON(w, code, map[string]any{"error": "Unauthorized", "message": e.Message})
	case rt.group == groupDomainLog && !(code == http.StatusInternalServerError && rt.faultsAsSuccess):
		body := map[string]any{"error": e.Message}
		if len(e.Fields) > 0 {
			body["errors"] = e.Fields
		}
		writeJSON(w, code, body)
	default:
		body := map[string]any{"success": false, "message": e.Message}
		if len(e.Fields) > 0 {
			body["errors"] = e.Fields
			if code == http.StatusUnprocessableEntity { // the document's fixed summary; the details are in errors
				body["message"] = "Invalid request parameters"
			}
		}
		writeJSON(w, code, body)
	}
}
