package httpapi

import (
	"context"
	"errors"
	"fmt"
	"io"

	"github.com/postline/postline/internal/apperr"
	"github.com/postline/postline/internal/spool"
)

// The answers of a body the spool's budgets refuse (internal/spool): each
// names the setting, and nothing was stored.
const (
	msgSpoolFull = "Insufficient storage: the spool of bodies being received is full (--spool-max-bytes); nothing was stored. Retry shortly"
	msgSpoolBusy = "Too many large bodies are being processed at once (--spool-processing-memory); nothing was stored. Retry shortly"
)

// parts reads one request's multipart parts within the spool's budgets,
// shared with every other door, and holds what their bytes take of them
// until close: the handler closes it once it has answered.
type parts struct {
	ctx    context.Context
	spool  *spool.Spool
	bodies []*spool.Body
}

func (s *Server) parts(ctx context.Context) *parts {
	return &parts{ctx: ctx, spool: s.Spool}
}

// read reads a part of at most limit bytes. Past a mebibyte (or sooner,
// when many bodies arrive at once) it waits in the spool until it has all
// arrived, so that an upload that never finishes costs disk, not memory.
func (p *parts) read(r io.Reader, field string, limit int64) ([]byte, error) {
	b, data, err := p.spool.ReadAll(p.ctx, io.LimitReader(r, limit+1))
	switch {
	case errors.Is(err, spool.ErrFull):
		return nil, &apperr.Error{Code: apperr.InsufficientStorage, Message: msgSpoolFull, Err: err}
	case errors.Is(err, spool.ErrBusy):
		return nil, &apperr.Error{Code: apperr.Unavailable, Message: msgSpoolBusy, Err: err}
	case errors.Is(err, spool.ErrWrite):
		return nil, err // a full disk is a 507 naming it (apperr.Classify)
	case err != nil:
		return nil, tooLargeOr(err, apperr.Field("body", "The multipart body is malformed."))
	}
	p.bodies = append(p.bodies, b)
	if int64(len(data)) > limit {
		return nil, apperr.Field(field, fmt.Sprintf("The %s part must not be larger than %d bytes.", field, limit))
	}
	return data, nil
}

// close gives back what the parts' bytes hold of the spool's budgets.
func (p *parts) close() {
	for _, b := range p.bodies {
		b.Close()
	}
	p.bodies = nil
}
