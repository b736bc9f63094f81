package egress

import (
	"errors"
	"fmt"
	"net"
	"net/netip"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/BurntSushi/toml"
	"github.com/postline/postline/internal/shaping"
)

// Source is one egress source: a local address to bind and the EHLO name
// to give from it.
type Source struct {
	Name string
	// Address is the local IP bound for each connection; the zero value
	// lets the system choose.
	Address netip.Addr
	// EHLODomain is the EHLO name; "" means the transport's default.
	EHLODomain string
	Warmup     Warmup
}

// Entry is one source of a pool with its weight (at least 1).
type Entry struct {
	Source string
	Weight int
}

// Pool is a named set of weighted sources.
type Pool struct {
	Name    string
	Entries []Entry
}

// Config is a parsed egress file.
type Config struct {
	Sources map[string]Source
	Pools   map[string]Pool
}

// HasPool reports whether c defines the pool name (a nil Config defines
// none).
func (c *Config) HasPool(name string) bool {
	if c == nil {
		return false
	}
	_, ok := c.Pools[name]
	return ok
}

type rawFile struct {
	Source map[string]rawSource `toml:"source"`
	Pool   map[string]rawPool   `toml:"pool"`
}

type rawSource struct {
	SourceAddress string   `toml:"source_address"`
	EHLODomain    string   `toml:"ehlo_domain"`
	Warmup        []string `toml:"warmup"`
	WarmupStart   string   `toml:"warmup_start"`
}

type rawPool struct {
	Entries []struct {
		Name   string `toml:"name"`
		Weight *int   `toml:"weight"`
	} `toml:"entries"`
}

// Load reads and checks the egress file at path.
func Load(path string) (*Config, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("egress: %w", err)
	}
	c, err := Parse(string(b))
	if err != nil {
		return nil, fmt.Errorf("egress: %s: %w", path, err)
	}
	return c, nil
}

// Parse reads an egress file's text. Unknown keys are errors: a
// misspelt source_address would otherwise send from the wrong address.
func Parse(text string) (*Config, error) {
	var raw rawFile
	md, err := toml.Decode(text, &raw)
	if err != nil {
		return nil, err
	}
	if und := md.Undecoded(); len(und) > 0 {
		return nil, fmt.Errorf("unknown key %s", und[0])
	}
	c := &Config{Sources: map[string]Source{}, Pools: map[string]Pool{}}
	for name, rs := range raw.Source {
		s, err := parseSource(name, rs)
		if err != nil {
			return nil, fmt.Errorf("source %q: %w", name, err)
		}
		c.Sources[name] = s
	}
	for name, rp := range raw.Pool {
		p := Pool{Name: name}
		for i, e := range rp.Entries {
			w := 1
			if e.Weight != nil {
				w = *e.Weight
			}
			switch _, ok := c.Sources[e.Name]; {
			case !ok:
				return nil, fmt.Errorf("pool %q: entries[%d]: no source named %q", name, i, e.Name)
			case w < 1:
				return nil, fmt.Errorf("pool %q: entries[%d]: weight %d is not at least 1", name, i, w)
			case slices.ContainsFunc(p.Entries, func(x Entry) bool { return x.Source == e.Name }):
				return nil, fmt.Errorf("pool %q: entries[%d]: source %q is listed twice", name, i, e.Name)
			}
			p.Entries = append(p.Entries, Entry{Source: e.Name, Weight: w})
		}
		if len(p.Entries) == 0 {
			return nil, fmt.Errorf("pool %q has no entries", name)
		}
		c.Pools[name] = p
	}
	return c, nil
}

func parseSource(name string, rs rawSource) (Source, error) {
	s := Source{Name: name, EHLODomain: strings.TrimSpace(rs.EHLODomain)}
	if strings.TrimSpace(name) == "" || strings.ContainsAny(name, "\x00\r\n") {
		return s, errors.New("a source needs a name")
	}
	if rs.SourceAddress != "" {
		a, err := netip.ParseAddr(strings.TrimSpace(rs.SourceAddress))
		if err != nil || a.Zone() != "" {
			return s, fmt.Errorf("source_address %q is not an IP address", rs.SourceAddress)
		}
		s.Address = a.Unmap()
	}
	if strings.ContainsAny(s.EHLODomain, " \t\r\n") {
		return s, fmt.Errorf("ehlo_domain %q contains white space", s.EHLODomain)
	}
	w, err := parseWarmup(rs.Warmup, rs.WarmupStart)
	if err != nil {
		return s, err
	}
	s.Warmup = w
	return s, nil
}

func parseWarmup(steps []string, start string) (Warmup, error) {
	var w Warmup
	if len(steps) == 0 {
		if start != "" {
			return w, errors.New("warmup_start without warmup")
		}
		return w, nil
	}
	if start == "" {
		return w, errors.New("warmup needs warmup_start (YYYY-MM-DD)")
	}
	d, err := time.Parse(time.DateOnly, start)
	if err != nil {
		return w, fmt.Errorf("warmup_start %q is not a date (YYYY-MM-DD)", start)
	}
	w.Start = d
	for i, s := range steps {
		r, err := shaping.ParseRate(s)
		if err != nil || r.Per != 24*time.Hour || r.Local {
			return w, fmt.Errorf("warmup[%d] %q is not a count a day (\"N/day\")", i, s)
		}
		w.Steps = append(w.Steps, r.Count)
	}
	return w, nil
}

// CheckBind binds each source's address (port 0, never connecting) and
// fails naming the first that cannot be bound: a source address not on
// this host would fail every delivery through it.
func (c *Config) CheckBind() error {
	if c == nil {
		return nil
	}
	names := make([]string, 0, len(c.Sources))
	for n := range c.Sources {
		names = append(names, n)
	}
	slices.Sort(names)
	for _, n := range names {
		s := c.Sources[n]
		if !s.Address.IsValid() {
			continue
		}
		l, err := net.ListenTCP("tcp", net.TCPAddrFromAddrPort(netip.AddrPortFrom(s.Address, 0)))
		if err != nil {
			return fmt.Errorf("egress: source %q: source_address %s cannot be bound: %w", n, s.Address, err)
		}
		l.Close()
	}
	return nil
}
