package delivery

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/postline/postline/internal/egress"
)

// WarmupCounter keeps the messages sent per source per UTC day, for
// warm-up caps: ratelimit.Counter's Incr and Decr (store.RateCounter
// shares them through the database).
type WarmupCounter interface {
	Incr(ctx context.Context, key string, windowStart time.Time, by int64, expire time.Duration) (int64, error)
	Decr(ctx context.Context, key string, windowStart time.Time) error
}

// WarmupKey is the counter key (WarmupCounter, store.RateCounter) of a
// source's warm-up count; its window is the UTC day (egress.Day). The
// "day:" prefix keeps it past the database counter's pruning of
// hour-long windows.
func WarmupKey(source string) string { return "day:warmup:" + source }

// chooseSource picks the source of tk's delivery from pool: the next of
// the site's weighted round robin among the sources whose warm-up cap
// for today has room, counting the message against that cap. When no
// source has room it returns how long until the next UTC day.
func (t *Transport) chooseSource(ctx context.Context, tk *Ticket, pool string) (time.Duration, *Error) {
	cfg := t.cfg.Egress
	if !cfg.HasPool(pool) {
		// Temporary: the operator removed or renamed the pool, and the
		// mail should wait for the file to be fixed, not bounce.
		return 0, &Error{Enhanced: "4.3.5", Temporary: true, Stage: StageConnect,
			Message: fmt.Sprintf("egress pool %q is not in the egress file", pool)}
	}
	p := cfg.Pools[pool]
	now := t.cfg.Now()
	day := egress.Day(now)
	tried := map[string]bool{}
	for {
		t.mu.Lock()
		pk := t.pickers[tk.site+"\x00"+pool]
		if pk == nil {
			pk = &picker{Picker: egress.NewPicker(p.Entries)}
			t.pickers[tk.site+"\x00"+pool] = pk
		}
		pk.used = time.Now()
		pick, ok := pk.Take(func(s string) bool { return !tried[s] && !t.full[s].Equal(day) })
		refunds := t.refunds
		t.mu.Unlock()
		if !ok {
			return day.Add(24 * time.Hour).Sub(now), nil
		}
		name := pick.Source
		tried[name] = true
		src := cfg.Sources[name]
		room, err := t.takeWarmup(ctx, src, now, day)
		if err != nil {
			// The count is unknown: wait rather than risk the cap.
			t.unpick(pk, pick)
			t.cfg.Logger.Warn("delivery: counting a warm-up message", "source", name, "error", err)
			return time.Minute, nil
		}
		if !room {
			t.mu.Lock()
			// A count given back since the look (a delivery turned away
			// or given up) may be this source's: then it has room again,
			// and marking it full would keep it idle for the rest of the
			// day with its cap not reached. Try it again instead.
			again := t.refunds != refunds
			if !again {
				t.full[name] = day // the source takes no part in the round today
			}
			pk.Undo(pick)
			t.mu.Unlock()
			if again {
				delete(tried, name)
			}
			continue
		}
		tk.source, tk.picker, tk.pick = src, pk, pick
		if _, capped := src.Warmup.Cap(now); capped {
			tk.warmDay = day
		}
		return 0, nil
	}
}

// picker is a site's round robin over a pool, forgotten with the paths
// (pruneLocked) when unused.
type picker struct {
	*egress.Picker
	used time.Time
}

// takeWarmup counts one message of src today when its warm-up cap has
// room, and says whether it had.
func (t *Transport) takeWarmup(ctx context.Context, src egress.Source, now, day time.Time) (bool, error) {
	n, capped := src.Warmup.Cap(now)
	if !capped {
		return true, nil
	}
	if n == 0 {
		return false, nil
	}
	c, err := t.cfg.Warmup.Incr(ctx, WarmupKey(src.Name), day, 1, 48*time.Hour)
	if err != nil {
		return false, err
	}
	if c > int64(n) {
		return false, t.cfg.Warmup.Decr(ctx, WarmupKey(src.Name), day)
	}
	return true, nil
}

// unpick takes back a pick of a site's round robin.
func (t *Transport) unpick(pk *picker, pick egress.Pick) {
	t.mu.Lock()
	defer t.mu.Unlock()
	pk.Undo(pick)
}

// unchooseSource gives back the choice of source of a delivery that was
// not attempted (it waits for its turn): its place in the site's round
// robin, so that the deliveries that go keep the pool's weights even
// when one source's path turns deliveries away more often than another's
// (a source with a larger weight reaches its path's limits first), and
// its warm-up count.
func (t *Transport) unchooseSource(tk *Ticket) {
	if tk.picker != nil {
		t.unpick(tk.picker, tk.pick)
		tk.picker = nil
	}
	t.refundWarmup(tk)
}

// refundWarmup gives back the warm-up count of a delivery that was not
// attempted.
func (t *Transport) refundWarmup(tk *Ticket) {
	if tk.warmDay.IsZero() {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := t.cfg.Warmup.Decr(ctx, WarmupKey(tk.source.Name), tk.warmDay); err != nil {
		t.cfg.Logger.Warn("delivery: giving back a warm-up count", "source", tk.source.Name, "error", err)
	}
	t.mu.Lock()
	delete(t.full, tk.source.Name)
	t.refunds++
	t.mu.Unlock()
	tk.warmDay = time.Time{}
}

// namedSource is the source r.Source names in the egress file, or a
// source of that name without an address.
func (t *Transport) namedSource(name string) egress.Source {
	if t.cfg.Egress != nil {
		if s, ok := t.cfg.Egress.Sources[name]; ok {
			return s
		}
	}
	return egress.Source{Name: name}
}

// sourceNames are the source's name and bound address for the log.
func (tk *Ticket) sourceNames() (string, string) {
	if !tk.source.Address.IsValid() {
		return tk.source.Name, ""
	}
	return tk.source.Name, tk.source.Address.String()
}

// poolWait is the error of a blocking Send when no source of the pool has
// room today: Send does not wait a day.
func poolWait(pool string, wait time.Duration) *Error {
	return &Error{Enhanced: "4.4.5", Temporary: true, Stage: StageConnect, Wait: wait,
		Message: fmt.Sprintf("every source of egress pool %s reached its warm-up cap for today; not attempted", pool)}
}

// memCounter is an in-process WarmupCounter.
type memCounter struct {
	mu sync.Mutex
	n  map[string]int64
}

func newMemCounter() *memCounter { return &memCounter{n: map[string]int64{}} }

func (m *memCounter) Incr(_ context.Context, key string, start time.Time, by int64, _ time.Duration) (int64, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	k := key + "\x00" + start.UTC().Format(time.RFC3339)
	m.n[k] += max(by, 1)
	return m.n[k], nil
}

func (m *memCounter) Decr(_ context.Context, key string, start time.Time) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	k := key + "\x00" + start.UTC().Format(time.RFC3339)
	if m.n[k] > 0 {
		m.n[k]--
	}
	return nil
}
