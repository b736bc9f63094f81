package httpapi

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http/httptest"
	"strings"
	"syscall"
	"testing"

	"github.com/jackc/pgx/v5/pgconn"

	"github.com/postline/postline/internal/apperr"
)

// The document gives endpoint groups different error bodies; this pins
// each group's shape for each kind of error.
func TestErrorShapes(t *testing.T) {
	t.Parallel()
	s := &Server{Deps: Deps{Logger: slog.New(slog.NewTextHandler(io.Discard, nil))}}
	invalid := &apperr.Error{Code: apperr.Invalid, Message: "bad", Fields: map[string][]string{"to": {"required"}}}
	cases := []struct {
		name   string
		rt     route
		err    error
		status int
		body   string
	}{
		{"log: auth", route{group: groupDomainLog}, apperr.Errorf(apperr.Unauthorized, "Authorization header is required"), 401, `{"error":"Authorization header is required"}`},
		{"log: disabled account", route{group: groupDomainLog}, apperr.Errorf(apperr.AuthMissing, "User authentication missing"), 400, `{"error":"User authentication missing"}`},
		{"log: not found", route{group: groupDomainLog}, apperr.Errorf(apperr.NotFound, "Domain not found or not owned by user"), 404, `{"error":"Domain not found or not owned by user"}`},
		{"send: invalid", route{group: groupDomainLog}, invalid, 422, `{"error":"bad","errors":{"to":["required"]}}`},
		{"log: fault hides detail", route{group: groupDomainLog}, errors.New("pq: secret detail"), 500, `{"error":"Internal server error"}`},
		{"send: fault", route{group: groupDomainLog, faultsAsSuccess: true}, errors.New("boom"), 500, `{"message":"Internal server error","success":false}`},
		{"validation: invalid", route{group: groupValidation}, invalid, 422, `{"errors":{"to":["required"]},"message":"Invalid request parameters","success":false}`},
		{"validation: disabled account", route{group: groupValidation}, apperr.Errorf(apperr.AuthMissing, "User authentication missing"), 401, `{"message":"User authentication missing","success":false}`},
		{"delete: auth", route{group: groupDelete}, apperr.Errorf(apperr.Unauthorized, "Authorization header is invalid"), 401, `{"error":"Unauthorized","message":"Authorization header is invalid"}`},
		{"delete: not found", route{group: groupDelete}, apperr.Errorf(apperr.NotFound, "domain x not found"), 404, `{"message":"domain x not found","success":false}`},
		{"validation: rate limited", route{group: groupValidation}, &rateLimited{retryAfter: 7}, 429, `{"message":"Too many requests. Try again in 7 seconds.","retry_after":7,"success":false}`},
		{"domain: rate limited", route{group: groupDomain}, &rateLimited{retryAfter: 7}, 429, `{"message":"Too many requests. Try again in 7 seconds.","success":false}`},
		{"domain: too large", route{group: groupDomain}, apperr.Errorf(apperr.TooLarge, "too big"), 413, `{"message":"too big","success":false}`},
		{"send: database too slow", route{group: groupDomainLog, faultsAsSuccess: true}, apperr.Wrap(apperr.Internal, context.DeadlineExceeded, "store"), 503, `{"error":"` + apperr.MsgTimedOut + `"}`},
		{"domain: database down", route{group: groupDomain}, fmt.Errorf("store: %w", &pgconn.PgError{Code: "57P01"}), 503, `{"message":"` + apperr.MsgDatabaseDown + `","success":false}`},
		{"send: disk full", route{group: groupDomainLog, faultsAsSuccess: true}, fmt.Errorf("store: %w", syscall.ENOSPC), 507, `{"error":"` + apperr.MsgDiskFull + `"}`},
		{"domain: database full", route{group: groupDomain}, &pgconn.PgError{Code: "53100"}, 507, `{"message":"` + apperr.MsgPostgresFull + `","success":false}`},
		{"mailgun: disk full", route{group: groupMailgun}, fmt.Errorf("store: %w", syscall.ENOSPC), 507, `{"message":"` + apperr.MsgDiskFull + `"}`},
	}
	for _, c := range cases {
		w := httptest.NewRecorder()
		s.writeError(w, httptest.NewRequest("GET", "/", nil), c.rt, c.err)
		var got, want any
		json.Unmarshal(w.Body.Bytes(), &got)
		json.Unmarshal([]byte(c.body), &want)
		gb, _ := json.Marshal(got)
		wb, _ := json.Marshal(want)
		if w.Code != c.status || string(gb) != string(wb) {
			t.Errorf("%s: %d %s, want %d %s", c.name, w.Code, gb, c.status, wb)
		}
		// A dependency down is worth retrying, and the answer says when.
		if ra := w.Header().Get("Retry-After"); c.status == 503 && ra != "5" {
			t.Errorf("%s: Retry-After %q, want 5", c.name, ra)
		}
	}
}

// A service's RateLimited error with RetryAfter (a volume budget) answers
// as the request budget does: 429, Retry-After, the group's shape.
func TestServiceRateLimitedCarriesRetryAfter(t *testing.T) {
	t.Parallel()
	s := &Server{Deps: Deps{Logger: slog.New(slog.NewTextHandler(io.Discard, nil))}}
	err := &apperr.Error{Code: apperr.RateLimited, Message: "The account stored its bytes for today.", RetryAfter: 9}
	for rt, body := range map[group]string{groupDomainLog: `{"message":"The account stored its bytes for today.","success":false}`,
		groupMailgun: `{"message":"The account stored its bytes for today."}`} {
		w := httptest.NewRecorder()
		s.writeError(w, httptest.NewRequest("POST", "/", nil), route{group: rt}, err)
		if w.Code != 429 || w.Header().Get("Retry-After") != "9" || strings.TrimSpace(w.Body.String()) != body {
			t.Errorf("group %v: %d Retry-After %q %s", rt, w.Code, w.Header().Get("Retry-After"), w.Body)
		}
	}
}
