package event

import (
	"container/heap"
	"fmt"
	"iter"
	"math/rand/v2"
	"time"
)

// SyntheticParams describe generated log entries (`postline dev seed-log`,
// benchmarks, demos).
type SyntheticParams struct {
	DomainID int64
	Domain   string // sender addresses and links are under it
	From, To time.Time
	Count    int
	Seed     uint64
}

// Synthetic yields Count entries of plausible message lifecycles between
// From and To, in created_at order (so that ids recorded in that order grow
// with created_at). Lifecycles follow the service's event meanings: queued,
// send, then delivered (sometimes opened, clicked, unsubscribed), or
// temporary failures with deferrals and retries, permanent failures and
// bounces, suppressed or exhausted deliveries. The first three messages
// cover the eleven types between them, so with Count >= 15 every type
// appears. Senders, recipients, subjects and tags vary.
func Synthetic(p SyntheticParams) iter.Seq[Entry] {
	return func(yield func(Entry) bool) {
		g := &synth{p: p, rng: rand.New(rand.NewPCG(p.Seed, 0x9e3779b97f4a7c15))}
		g.run(yield)
	}
}

type step struct {
	typ   Type
	after time.Duration // since the previous step
}

// lifecycles, weighted: the usual path dominates.
var lifecycles = []struct {
	weight int
	steps  []step
}{
	{40, []step{{Queued, 0}, {Send, 2 * time.Second}, {Delivered, 3 * time.Second}}},
	{18, []step{{Queued, 0}, {Send, 2 * time.Second}, {Delivered, 3 * time.Second}, {Opened, 40 * time.Minute}}},
	{9, []step{{Queued, 0}, {Send, 2 * time.Second}, {Delivered, 3 * time.Second}, {Opened, 30 * time.Minute}, {Clicked, 2 * time.Minute}}},
	{2, []step{{Queued, 0}, {Send, 2 * time.Second}, {Delivered, 3 * time.Second}, {Opened, time.Hour}, {Unsubscribed, time.Minute}}},
	{8, []step{{Queued, 0}, {Send, 2 * time.Second}, {TemporaryFail, 5 * time.Second}, {Deferred, 0}, {Send, 5 * time.Minute}, {Delivered, 3 * time.Second}}},
	{6, []step{{Queued, 0}, {Send, 2 * time.Second}, {PermanentFail, 4 * time.Second}, {Bounced, 0}}},
	{3, []step{{Queued, 0}, {Send, 2 * time.Second}, {Delivered, 3 * time.Second}, {Bounced, 20 * time.Minute}}},
	{3, []step{{Queued, 0}, {Send, 2 * time.Second}, {TemporaryFail, 5 * time.Second}, {Deferred, 0}, {Send, time.Minute},
		{TemporaryFail, 5 * time.Second}, {Deferred, 0}, {Send, 5 * time.Minute}, {TemporaryFail, 5 * time.Second}, {Failed, 0}}},
	{3, []step{{Queued, 0}, {Failed, 0}}},
}

// scripted are the first three messages: together, all eleven types.
var scripted = [][]step{
	{{Queued, 0}, {Send, time.Second}, {Delivered, time.Second}, {Opened, time.Minute}, {Clicked, time.Second}, {Unsubscribed, time.Second}},
	{{Queued, 0}, {Send, time.Second}, {TemporaryFail, time.Second}, {Deferred, 0}, {Send, time.Minute}, {PermanentFail, time.Second}, {Bounced, 0}},
	{{Queued, 0}, {Failed, 0}},
}

const meanSteps = 4.4 // of the weighted lifecycles, to pace message starts

var (
	senders  = []string{"noreply", "billing", "news", "support", "alerts"}
	first    = []string{"anna", "ben", "chloe", "david", "emma", "farid", "grace", "hiro", "ines", "jonas", "kofi", "lena", "marco", "nadia", "oscar", "priya"}
	last     = []string{"smith", "garcia", "muller", "rossi", "kim", "nguyen", "okafor", "silva", "novak", "dubois", "tanaka", "berg"}
	provider = []string{"gmail.com", "outlook.com", "yahoo.com", "icloud.com", "proton.me", "gmx.de", "example.com", "example.org"}
	agents   = []string{"Mozilla/5.0 (iPhone; CPU iPhone OS 17_4 like Mac OS X)", "Mozilla/5.0 (Windows NT 10.0; Win64; x64) Chrome/124.0", "Microsoft Outlook 16.0", "Mozilla/5.0 (Macintosh; Intel Mac OS X 14_4) Safari/605.1.15"}
)

type pending struct {
	at    time.Time
	seq   int // tie-break: generation order
	entry Entry
}

type pendingHeap []pending

func (h pendingHeap) Len() int { return len(h) }
func (h pendingHeap) Less(i, j int) bool {
	if !h[i].at.Equal(h[j].at) {
		return h[i].at.Before(h[j].at)
	}
	return h[i].seq < h[j].seq
}
func (h pendingHeap) Swap(i, j int) { h[i], h[j] = h[j], h[i] }
func (h *pendingHeap) Push(x any)   { *h = append(*h, x.(pending)) }
func (h *pendingHeap) Pop() any {
	old := *h
	x := old[len(old)-1]
	*h = old[:len(old)-1]
	return x
}

type synth struct {
	p       SyntheticParams
	rng     *rand.Rand
	heap    pendingHeap
	seq     int
	emitted int
}

func (g *synth) run(yield func(Entry) bool) {
	p := g.p
	t := p.From
	generated := 0
	for msg := 0; generated < p.Count; msg++ {
		var steps []step
		if msg < len(scripted) {
			steps = scripted[msg]
		} else {
			steps = g.pick()
			// Pace starts so that the entries spread over the whole window:
			// the mean gap is what is left of it per message still needed.
			left := float64(p.Count-generated) / meanSteps
			gap := time.Duration(float64(p.To.Sub(t)) / max(left, 1) * g.rng.ExpFloat64())
			t = t.Add(min(gap, p.To.Sub(t)))
		}
		if !g.drainUntil(t, yield) {
			return
		}
		end := g.message(t, steps)
		generated += len(steps)
		if msg < len(scripted) {
			t = end // later messages start after the scripted ones finish
		}
	}
	g.drainUntil(p.To, yield) // every entry is at or before To
}

func (g *synth) pick() []step {
	n := g.rng.IntN(92)
	for _, l := range lifecycles {
		if n < l.weight {
			return l.steps
		}
		n -= l.weight
	}
	return lifecycles[0].steps
}

// drainUntil yields the pending entries up to t; false means stop.
func (g *synth) drainUntil(t time.Time, yield func(Entry) bool) bool {
	for len(g.heap) > 0 && !g.heap[0].at.After(t) && g.emitted < g.p.Count {
		e := heap.Pop(&g.heap).(pending).entry
		g.emitted++
		if !yield(e) {
			return false
		}
	}
	return true
}

// message queues one message's entries from start and returns the time of
// its last one.
func (g *synth) message(start time.Time, steps []step) time.Time {
	r, p := g.rng, g.p
	s := senders[r.IntN(len(senders))]
	sender := s + "@" + p.Domain
	mailDomain := provider[r.IntN(len(provider))]
	rcpt := fmt.Sprintf("%s.%s%d@%s", first[r.IntN(len(first))], last[r.IntN(len(last))], r.IntN(100), mailDomain)
	if r.IntN(10) == 0 {
		rcpt = capitalise(rcpt) // mixed case happens; filters ignore it
	}
	subject, tags := g.subject(s)
	msgID := fmt.Sprintf("<%016x@%s>", r.Uint64(), p.Domain)
	ip := fmt.Sprintf("198.51.100.%d", 1+r.IntN(254))
	at, attempt := start, 0
	for _, st := range steps {
		// Jitter the gaps so that entries of concurrent messages interleave.
		at = at.Add(st.after + time.Duration(r.Int64N(int64(st.after/2)+int64(time.Second))))
		if at.After(p.To) {
			at = p.To
		}
		d := map[string]any{}
		switch st.typ {
		case Queued:
			d["source"] = "api"
		case Send:
			attempt++
			d["attempt"], d["mx"] = attempt, fmt.Sprintf("mx%d.%s", 1+r.IntN(3), mailDomain)
		case Delivered:
			d["attempt"], d["smtp_code"], d["smtp_message"] = attempt, 250, "2.0.0 OK "+msgID
		case TemporaryFail:
			d["attempt"], d["smtp_code"], d["smtp_message"] = attempt, 421, "4.7.0 Try again later, closing connection"
		case Deferred:
			d["attempt"], d["next_attempt_at"] = attempt, at.Add(5*time.Minute).UTC().Format(time.RFC3339)
		case PermanentFail:
			d["attempt"], d["smtp_code"], d["smtp_message"] = attempt, 550, "5.1.1 The email account that you tried to reach does not exist"
		case Bounced:
			d["reason"], d["smtp_code"] = "user_unknown", 550
		case Failed:
			d["reason"] = "retries_exhausted"
			if attempt == 0 {
				d["reason"] = "suppressed"
			}
		case Opened, Unsubscribed:
			d["ip"], d["user_agent"] = ip, agents[r.IntN(len(agents))]
		case Clicked:
			d["ip"], d["user_agent"], d["url"] = ip, agents[r.IntN(len(agents))], "https://"+p.Domain+"/offers?id="+fmt.Sprint(r.IntN(50))
		}
		g.seq++
		heap.Push(&g.heap, pending{at: at, seq: g.seq, entry: Entry{DomainID: p.DomainID, MessageID: msgID, Type: st.typ,
			Sender: sender, Recipient: rcpt, Subject: subject, Tags: tags, CreatedAt: at, Details: NewDetails(d)}})
	}
	return at
}

func (g *synth) subject(sender string) (string, string) {
	r := g.rng
	switch sender {
	case "billing":
		return []string{fmt.Sprintf("Your invoice #%d", 10000+r.IntN(90000)), "Payment received, thank you",
			fmt.Sprintf("Receipt for order %d", 500000+r.IntN(500000))}[r.IntN(3)], "billing,invoice"
	case "news":
		return []string{"Weekly digest: what's new", "New features this month ✨", "Your November highlights"}[r.IntN(3)], "newsletter,weekly"
	case "support":
		return fmt.Sprintf("Re: ticket #%d", 1000+r.IntN(9000)), "support"
	case "alerts":
		return fmt.Sprintf("Alert: storage usage at %d%%", 80+r.IntN(20)), ""
	default:
		return []string{"Reset your password", "Confirm your email address", fmt.Sprintf("Your login code is %06d", r.IntN(1000000))}[r.IntN(3)], "transactional"
	}
}

func capitalise(s string) string {
	if s == "" || s[0] < 'a' || s[0] > 'z' {
		return s
	}
	return string(s[0]-'a'+'A') + s[1:]
}
