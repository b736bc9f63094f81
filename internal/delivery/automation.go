package delivery

import (
	"context"
	"slices"

	"github.com/postline/postline/internal/shaping"
)

// Site is the site of tk's delivery as shaping and suspensions name it
// (the set of MX hosts), or the relay host.
func (tk *Ticket) Site() string { return tk.site }

// Automation is the automation rules in force for tk's site: the replies
// its attempt gets are matched against them (package sending).
func (tk *Ticket) Automation() []shaping.Rule { return tk.rules }

// overridden is l with what automation rules override for site now.
func (t *Transport) overridden(ctx context.Context, site string, l shaping.Limits) shaping.Limits {
	if t.cfg.Overrides == nil {
		return l
	}
	return l.With(t.cfg.Overrides(ctx, site))
}

// shedIdleLocked closes idle connections of p while it holds more than
// its connection_limit, which just went down (a SetConfig override): an
// idle connection reused would keep the old limit in force until it
// timed out. Busy ones close when their delivery ends (park).
func (t *Transport) shedIdleLocked(p *path) {
	n := min(p.open-p.lim.conns, len(p.idle)) // release counts them off, later
	for _, s := range p.idle[:max(n, 0)] {
		s.timer.Stop() // if it already fired, expire finds it gone
		go func() {
			s.quit()
			t.release(p, s.provs)
		}()
	}
	if n > 0 {
		p.idle = slices.Delete(p.idle, 0, n)
	}
}
