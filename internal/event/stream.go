package event

import (
	"context"
	"time"

	"github.com/postline/postline/internal/apperr"
)

// MaxBatch is the most entries one stream frame carries.
const MaxBatch = 1000

// StreamParams describe a stream.
type StreamParams struct {
	// Filter selects the entries; AfterID resumes after that id. Limit,
	// Offset, Order and UpToID are the stream's own business.
	Filter Filter
	// Limit caps the entries sent on this stream, backlog and live tail
	// together; a client that wants more reconnects with the last id.
	Limit int
	// Follow keeps the stream open after the backlog for new entries.
	Follow bool
}

// Sink receives a stream's frames. An error from it ends the stream.
type Sink interface {
	Logs(batch []Entry) error // 1..MaxBatch entries, ascending ids
	Complete(total int) error // once, after the backlog
	Heartbeat() error         // nothing to say for a while
}

// Stream is an opened stream: the checks that can fail with a clean error
// are done, nothing is sent yet.
type Stream struct {
	s      *Service
	p      StreamParams
	lo, hi int64 // ids of the backlog that match the time range
	top    int64 // the domain's largest id when the stream opened
	wake   <-chan struct{}
	cancel func()
}

// OpenStream prepares a stream. Its errors come before any byte is sent,
// so a transport can still answer them with a status.
func (s *Service) OpenStream(ctx context.Context, p StreamParams) (*Stream, error) {
	if p.Limit < 1 {
		return nil, apperr.Field("limit", "limit must be at least 1")
	}
	st := &Stream{s: s, p: p, cancel: func() {}}
	if p.Follow {
		// Subscribe before reading the bounds, so that an entry committed
		// in between is either in the backlog or wakes us.
		st.wake, st.cancel = s.hub.subscribe(p.Filter.DomainID)
	}
	var err error
	if _, st.top, err = s.store.Bounds(ctx, Filter{DomainID: p.Filter.DomainID}); err == nil {
		st.lo, st.hi, err = s.store.Bounds(ctx, Filter{DomainID: p.Filter.DomainID, Start: p.Filter.Start, End: p.Filter.End})
	}
	if err != nil {
		st.cancel()
		return nil, err
	}
	return st, nil
}

// Close releases a stream that will not Run.
func (st *Stream) Close() { st.cancel() }

// Run sends the backlog (entries after AfterID within the snapshot taken by
// OpenStream), then Complete, then with Follow the live tail until the
// limit, ctx's end or a Sink error. A finished ctx is not an error.
func (st *Stream) Run(ctx context.Context, sink Sink) error {
	defer st.cancel()
	f := st.p.Filter
	f.Order, f.Offset = OldestFirst, 0
	cursor := f.AfterID
	if st.lo > 0 {
		// The time range starts at lo: skip straight there.
		cursor = max(cursor, st.lo-1)
	}
	sent, cursor, err := st.drain(ctx, f, cursor, st.hi, 0, sink)
	if err != nil || ctx.Err() != nil {
		return quiet(ctx, err)
	}
	if err := sink.Complete(sent); err != nil {
		return quiet(ctx, err)
	}
	if !st.p.Follow || sent >= st.p.Limit {
		return nil
	}
	// Every id up to top was there at open and has been considered.
	return quiet(ctx, st.follow(ctx, f, max(cursor, st.top), sent, sink))
}

// drain sends the entries with ids in (cursor, upTo] page by page and
// returns the new count and cursor (upTo once the range is exhausted).
func (st *Stream) drain(ctx context.Context, f Filter, cursor, upTo int64, sent int, sink Sink) (int, int64, error) {
	for sent < st.p.Limit && cursor < upTo {
		if err := ctx.Err(); err != nil {
			return sent, cursor, err
		}
		f.AfterID, f.UpToID, f.Limit = cursor, upTo, min(MaxBatch, st.p.Limit-sent)
		batch, err := st.s.store.List(ctx, f)
		if err != nil {
			return sent, cursor, err
		}
		if len(batch) > 0 {
			if err := sink.Logs(batch); err != nil {
				return sent, cursor, err
			}
			sent, cursor = sent+len(batch), batch[len(batch)-1].ID
		}
		if len(batch) < f.Limit {
			cursor = upTo
		}
	}
	return sent, cursor, nil
}

// follow waits for wake-ups (or the poll tick) and sends what is new.
func (st *Stream) follow(ctx context.Context, f Filter, cursor int64, sent int, sink Sink) error {
	cfg := st.s.cfg
	heartbeat := time.NewTimer(cfg.Heartbeat)
	defer heartbeat.Stop()
	poll := time.NewTicker(cfg.Poll)
	defer poll.Stop()
	for sent < st.p.Limit {
		_, top, err := st.s.store.Bounds(ctx, Filter{DomainID: f.DomainID})
		if err != nil {
			return err
		}
		if top > cursor {
			before := sent
			if sent, cursor, err = st.drain(ctx, f, cursor, top, sent, sink); err != nil {
				return err
			}
			if sent > before {
				heartbeat.Reset(cfg.Heartbeat)
			}
			continue // the limit may be reached, or more arrived meanwhile
		}
		select {
		case <-ctx.Done():
			return nil
		case <-st.wake:
		case <-poll.C:
		case <-heartbeat.C:
			if err := sink.Heartbeat(); err != nil {
				return err
			}
			heartbeat.Reset(cfg.Heartbeat)
		}
	}
	return nil
}

// quiet drops the error of a stream ended by its context: the client left
// or the server is stopping, which is how streams end.
func quiet(ctx context.Context, err error) error {
	if ctx.Err() != nil {
		return nil
	}
	return err
}
