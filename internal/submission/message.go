package submission

import (
	"time"

	"github.com/postline/postline/internal/apperr"
	"github.com/postline/postline/internal/sending"
)

// prepare is sending.PrepareRaw with its refusals as 554 replies.
func prepare(raw []byte, idDomain string, now time.Time) (sending.RawPrepared, error) {
	p, err := sending.PrepareRaw(raw, idDomain, now)
	if e, ok := apperr.As(err); ok {
		msg := e.Message
		if m := e.Fields["message"]; len(m) > 0 {
			msg = m[0]
		}
		return p, badMessage(msg)
	}
	return p, err
}
