package store

import (
	"context"
	"fmt"
	"log/slog"
	"strconv"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
)

// EventListener relays PostgreSQL notifications of committed event inserts
// (from this process or any other sharing the database) to wake, so that a
// stream following a domain on one process sees entries recorded by
// another. It holds one dedicated connection outside the pool, since
// LISTEN belongs to a session. On SQLite it does nothing: every writer of
// the file that matters is the serving process, whose Record wakes its
// followers directly (other writers are caught by the followers' poll).
type EventListener struct {
	db      *DB
	wake    func(domainID int64)
	wakeAll func()
	log     *slog.Logger
	stop    context.CancelFunc
	wg      sync.WaitGroup
}

// NewEventListener returns a listener calling wake with each notified
// domain id, and wakeAll after a reconnect (notifications sent while the
// connection was down are lost; everyone looks again).
func NewEventListener(db *DB, wake func(domainID int64), wakeAll func(), log *slog.Logger) *EventListener {
	if log == nil {
		log = slog.Default()
	}
	return &EventListener{db: db, wake: wake, wakeAll: wakeAll, log: log}
}

// Start connects and listens before it returns (so that an entry recorded
// after Start is seen), then relays in the background until Stop or ctx
// ends, reconnecting with backoff.
func (l *EventListener) Start(ctx context.Context) error {
	if l.db.Dialect != Postgres {
		return nil
	}
	conn, err := l.connect(ctx)
	if err != nil {
		return err
	}
	ctx, l.stop = context.WithCancel(ctx)
	l.wg.Add(1)
	go func() {
		defer l.wg.Done()
		l.loop(ctx, conn)
	}()
	return nil
}

// Stop ends the listener and waits for it.
func (l *EventListener) Stop() {
	if l.stop != nil {
		l.stop()
	}
	l.wg.Wait()
}

func (l *EventListener) connect(ctx context.Context) (*pgx.Conn, error) {
	conn, err := pgx.Connect(ctx, l.db.URL)
	if err != nil {
		return nil, fmt.Errorf("store: event listener: %w", err)
	}
	if _, err := conn.Exec(ctx, `LISTEN `+l.db.eventsChannel()); err != nil {
		conn.Close(context.Background())
		return nil, fmt.Errorf("store: event listener: %w", err)
	}
	return conn, nil
}

func (l *EventListener) loop(ctx context.Context, conn *pgx.Conn) {
	backoff := 100 * time.Millisecond
	for {
		for conn == nil {
			select {
			case <-ctx.Done():
				return
			case <-time.After(backoff):
			}
			var err error
			if conn, err = l.connect(ctx); err != nil {
				l.log.Warn("event listener: reconnect failed", "error", err)
				backoff = min(2*backoff, 10*time.Second)
				continue
			}
			backoff = 100 * time.Millisecond
			l.wakeAll()
		}
		n, err := conn.WaitForNotification(ctx)
		if err != nil {
			conn.Close(context.Background())
			conn = nil
			if ctx.Err() != nil {
				return
			}
			l.log.Warn("event listener: connection lost", "error", err)
			continue
		}
		if id, err := strconv.ParseInt(n.Payload, 10, 64); err == nil {
			l.wake(id)
		}
	}
}
