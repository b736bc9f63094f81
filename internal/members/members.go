// Package members keeps count of the processes delivering from one
// database, so that a limit meant for all of them together (a shaping
// file's provider_connection_limit and provider_max_message_rate) can be
// split between them: each live process takes its share.
//
// Each process beats every Beat, writing its row's seen_at; the members
// are the rows seen within Expiry. A process's share of a limit of N is
// N/n for n members, the remainder going one each to the longest running;
// a rate is divided by n. Shares add up to the limit as long as every
// process counts the same members. They may not for a moment when one
// joins: the others learn of it at their next beat, so a newcomer takes no
// share until two beats after it first wrote its row, unless it was
// alone then. A process
// that stops deletes its row and the others grow their shares at their
// next beat; one that dies keeps its share unused until its row expires.
//
// Splitting, rather than leasing places through the database at every
// connection, keeps admission in memory. It loses nothing as long as every
// process sees the same mix of mail, which it does: they claim from one
// queue, and a delivery a process cannot start goes back to that queue
// for any of them.
package members

import (
	"cmp"
	"context"
	"crypto/rand"
	"encoding/hex"
	"log/slog"
	"slices"
	"sync"
	"time"
)

// Member is one live process.
type Member struct {
	ID        string
	StartedAt time.Time
	SeenAt    time.Time
}

// Store keeps the members' rows.
type Store interface {
	// Beat writes id's row: started_at the first time, seen_at always.
	Beat(ctx context.Context, id string, started, now time.Time) error
	// Live lists the rows seen at or after since.
	Live(ctx context.Context, since time.Time) ([]Member, error)
	// Leave deletes id's row, and rows not seen since before (old rows
	// of processes that died).
	Leave(ctx context.Context, id string, before time.Time) error
}

// Defaults of Config.
const (
	DefaultBeat   = 2 * time.Second
	DefaultExpiry = 10 * time.Second
)

// Config configures a Registry.
type Config struct {
	Store  Store
	Beat   time.Duration // default DefaultBeat
	Expiry time.Duration // default DefaultExpiry; at least 3 beats
	Now    func() time.Time
	Logger *slog.Logger
}

// Registry is this process's membership. Its zero share before Run has
// settled keeps a newcomer from going past the others' shares.
type Registry struct {
	cfg     Config
	id      string
	started time.Time
	cancel  context.CancelFunc // ends run; nil before Start
	done    chan struct{}      // closed when run has left

	mu      sync.Mutex
	running bool      // Start was called: until then this process has every limit whole
	rank, n int       // this process's place among the n members (0 first)
	settled bool      // the others have had a beat to count this process
	first   time.Time // this process's first beat written
}

// New returns a Registry for one process, with a random id.
func New(cfg Config) *Registry {
	cfg.Beat = cmp.Or(cfg.Beat, DefaultBeat)
	cfg.Expiry = max(cmp.Or(cfg.Expiry, DefaultExpiry), 3*cfg.Beat)
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	b := make([]byte, 8)
	rand.Read(b)
	return &Registry{cfg: cfg, id: hex.EncodeToString(b), started: cfg.Now()}
}

// ID is this process's member id.
func (r *Registry) ID() string { return r.id }

// Start writes this process's first beat and counts the members, so
// that shares are known before the first delivery, then beats until ctx
// ends or Stop.
func (r *Registry) Start(ctx context.Context) {
	r.mu.Lock()
	r.running = true
	r.mu.Unlock()
	r.beat(ctx)
	ctx, r.cancel = context.WithCancel(ctx)
	r.done = make(chan struct{})
	go r.run(ctx)
}

// Stop stops beating and deletes this process's row, so the others take
// its share at their next beat. Call it when this process has closed its
// connections.
func (r *Registry) Stop() {
	if r.cancel == nil {
		return
	}
	r.cancel()
	<-r.done
}

func (r *Registry) run(ctx context.Context) {
	defer close(r.done)
	t := time.NewTicker(r.cfg.Beat)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			// A fresh context: ctx is done, and the row should go.
			lctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 2*time.Second)
			r.cfg.Store.Leave(lctx, r.id, r.cfg.Now().Add(-r.cfg.Expiry)) //nolint:errcheck // expires anyway
			cancel()
			return
		case <-t.C:
			r.beat(ctx)
		}
	}
}

// beat writes this process's row and counts the members. A failed write
// or read keeps the last count: the database being away for a moment
// must not stop delivery; the row expires if it stays away.
func (r *Registry) beat(ctx context.Context) {
	now := r.cfg.Now()
	if err := r.cfg.Store.Beat(ctx, r.id, r.started, now); err != nil {
		r.cfg.Logger.Warn("members: beat not written", "error", err)
		return
	}
	live, err := r.cfg.Store.Live(ctx, now.Add(-r.cfg.Expiry))
	if err != nil {
		r.cfg.Logger.Warn("members: members not read", "error", err)
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	slices.SortFunc(live, func(a, b Member) int {
		return cmp.Or(a.StartedAt.Compare(b.StartedAt), cmp.Compare(a.ID, b.ID))
	})
	r.n, r.rank = len(live), slices.IndexFunc(live, func(m Member) bool { return m.ID == r.id })
	if r.rank < 0 { // not read back: count it last
		r.n, r.rank = r.n+1, r.n
	}
	if r.first.IsZero() {
		r.first = now
		// Alone at its first count, no other process has a share to go
		// past: of two starting together, the one that reads last sees
		// the other.
		r.settled = r.n == 1
	}
	r.settled = r.settled || now.Sub(r.first) >= 2*r.cfg.Beat
}

// Count is how many processes share the limits, and whether this one has
// settled; 0 before its first beat.
func (r *Registry) Count() (n int, settled bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.n, r.settled
}

// Share is this process's part of a limit of limit places for all
// processes together: 0 until it has settled; the whole before Start (a
// command that does not deliver from the queue).
func (r *Registry) Share(limit int) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	if !r.running {
		return limit
	}
	if !r.settled || r.n == 0 {
		return 0
	}
	s := limit / r.n
	if r.rank < limit%r.n {
		s++
	}
	return s
}

// Divisor is what this process divides a rate for all processes
// together by: the number of members; 0 until it has settled (no share);
// 1 before Start.
func (r *Registry) Divisor() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	if !r.running {
		return 1
	}
	if !r.settled {
		return 0
	}
	return r.n
}
