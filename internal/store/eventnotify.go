package store

import (
	"context"
	"slices"
	"strconv"
	"sync"
	"time"

	"github.com/postline/postline/internal/event"
)

// eventNotifier sends the NOTIFY of committed event inserts (PostgreSQL)
// after their transactions commit, the domains of every transaction that
// committed meanwhile in one statement.
//
// A NOTIFY inside the recording transaction made its commit take
// PostgreSQL's one lock on notifications (PreCommit_Notify), held through
// the WAL flush: every commit that recorded entries, in every process on
// the server, ran one at a time, and four processes delivered 163 msgs/s
// against one's 285 (BENCHMARKS.md, "Several processes on PostgreSQL").
// Sent after the commit, on the relaxed pool (no WAL flush to wait for),
// and coalesced while one is on its way, the lock is taken a few times a
// second. A crash between a commit and its notification costs the
// followers elsewhere one poll (event.Config.Poll), never an entry: they
// read by id.
type eventNotifier struct {
	mu      sync.Mutex
	pending map[int64]bool
	sending bool
	wg      sync.WaitGroup
}

// add queues the domains' notification and starts a sender unless one is
// running (it takes these too before it stops).
func (n *eventNotifier) add(db *DB, domainIDs []int64) {
	n.mu.Lock()
	if n.pending == nil {
		n.pending = map[int64]bool{}
	}
	for _, id := range domainIDs {
		n.pending[id] = true
	}
	if n.sending {
		n.mu.Unlock()
		return
	}
	n.sending = true
	n.wg.Add(1)
	n.mu.Unlock()
	go n.send(db)
}

func (n *eventNotifier) send(db *DB) {
	defer n.wg.Done()
	for {
		n.mu.Lock()
		if len(n.pending) == 0 {
			n.sending = false
			n.mu.Unlock()
			return
		}
		ids := make([]string, 0, len(n.pending))
		for id := range n.pending {
			ids = append(ids, strconv.FormatInt(id, 10))
		}
		clear(n.pending)
		n.mu.Unlock()
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		// An error loses a wake-up only: the followers' poll reads the entries.
		db.relaxed.ExecContext(ctx, `SELECT pg_notify($1, d) FROM unnest($2::text[]) AS d`, db.eventsChannel(), ids) //nolint:errcheck
		cancel()
	}
}

// wait waits for the notifications on their way (Close).
func (n *eventNotifier) wait() { n.wg.Wait() }

// afterCommitter is a PostgreSQL transaction (InTx, InPipeline) that runs
// functions once it has committed.
type afterCommitter interface {
	afterCommit(func())
}

// hookedTx is InTx's transaction on PostgreSQL: an afterCommitter.
type hookedTx struct {
	Querier
	after *[]func()
}

func (t hookedTx) afterCommit(f func()) { *t.after = append(*t.after, f) }

// notify wakes the followers of entries' domains in every process once
// the transaction commits; in a transaction that cannot say when it
// committed, with a NOTIFY of its own, as before.
func (e Events) notify(ctx context.Context, entries []event.Entry) error {
	var ids []int64
	for _, en := range entries {
		if !slices.Contains(ids, en.DomainID) {
			ids = append(ids, en.DomainID)
		}
	}
	if h, ok := e.q.(afterCommitter); ok {
		h.afterCommit(func() { e.db.notifier.add(e.db, ids) })
		return nil
	}
	for _, id := range ids {
		if _, err := e.q.ExecContext(ctx, `SELECT pg_notify($1, $2)`, e.db.eventsChannel(), strconv.FormatInt(id, 10)); err != nil {
			return notFound(err, "event notify")
		}
	}
	return nil
}
