package sending

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/postline/postline/internal/apperr"
	"github.com/postline/postline/internal/templates"
)

// What a request may store. A batch renders one message per recipient:
// a template printing a 690 KB variable twice for 1,000 recipients was
// 1.4 GB from a 727 KB request. So every request is sized whole before
// its first commit (the rendered bytes of each message it queues and
// its copy of the attachments), refused past MaxRenderedBytes with
// nothing queued, and counted against its account's bytes of the day.
const (
	DefaultMaxRenderedBytes = 100 << 20
	DefaultDailyBytes       = 10 << 30
)

// Volume counts units against a limit per window, shared by every
// process that shares it (ratelimit.Limiter.Spend).
type Volume interface {
	Spend(ctx context.Context, key string, n, limit int64, window time.Duration) (ok bool, retryAfter int, err error)
}

// storedBytes is what one queued message stores of its own: its parts,
// its header fields and its copy of the attachments.
func storedBytes(out templates.Rendered, headers map[string]string, attachments int64) int64 {
	n := int64(len(out.Subject)+len(out.Text)+len(out.HTML)) + attachments
	for k, v := range headers {
		n += int64(len(k) + len(v))
	}
	return n
}

func attachmentBytes(atts []Attachment) int64 {
	var n int64
	for _, a := range atts {
		n += int64(len(a.Data))
	}
	return n
}

func (s *Service) maxRendered() int64 {
	if s.cfg.MaxRenderedBytes > 0 {
		return s.cfg.MaxRenderedBytes
	}
	return DefaultMaxRenderedBytes
}

// tooMuchRendered is the 413 of a request whose messages would store more
// than the request bound (n: what was counted when it was passed).
func (s *Service) tooMuchRendered(field string, recipients int, n int64) error {
	msg := fmt.Sprintf("The messages of this request would store more than %d bytes (%d so far, %d recipient(s), attachments included), "+
		"the limit of one request (--max-rendered-bytes-per-request): send fewer recipients or smaller variables.", s.maxRendered(), n, recipients)
	return &apperr.Error{Code: apperr.TooLarge, Message: msg, Fields: map[string][]string{field: {msg}}}
}

// spendDaily counts n stored bytes against the account's bytes of the UTC
// day, before they are committed. A counter that cannot be reached lets
// the request through, as the request budget does: an outage of the
// counters must not stop sending.
func (s *Service) spendDaily(ctx context.Context, accountID, n int64) error {
	if s.cfg.Volume == nil {
		return nil
	}
	limit := s.cfg.DailyBytes
	if limit <= 0 {
		limit = DefaultDailyBytes
	}
	ok, retryAfter, err := s.cfg.Volume.Spend(ctx, "day:bytes:"+strconv.FormatInt(accountID, 10), n, limit, 24*time.Hour)
	if err != nil || ok {
		return nil
	}
	return &apperr.Error{Code: apperr.RateLimited, RetryAfter: retryAfter, Message: fmt.Sprintf(
		"The account's sends have stored %d bytes of messages today, or would with this request's %d (--account-daily-bytes); "+
			"try again after 00:00 UTC, in %d seconds.", limit, n, retryAfter)}
}

// PartlyQueued is a batch whose later chunk could not be committed after
// earlier chunks were: those stay queued (their ids are Queued), so the
// request must not be answered as if nothing had been stored.
type PartlyQueued struct {
	Queued []string // message ids committed
	Total  int      // messages the batch had to queue
	Err    error
}

func (e *PartlyQueued) Error() string {
	return fmt.Sprintf("sending: %d of %d messages of a batch were queued before: %v", len(e.Queued), e.Total, e.Err)
}

func (e *PartlyQueued) Unwrap() error { return e.Err }

// Partly reports whether err left part of a batch queued.
func Partly(err error) (*PartlyQueued, bool) {
	var p *PartlyQueued
	return p, errors.As(err, &p)
}
