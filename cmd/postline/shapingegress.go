package main

import (
	"context"
	"fmt"
	"io"
	"slices"
	"strings"
	"time"

	"github.com/postline/postline/internal/delivery"
	"github.com/postline/postline/internal/egress"
	"github.com/postline/postline/internal/store"
)

// printEgress writes what `shaping show` adds with --egress-file: the
// pools that may carry the domain's mail (the one --pool names, else
// every pool of the file), each with its sources one a line: weight,
// source_address, ehlo_domain, today's warm-up cap and how much of it the
// database says is used (the count every process shares).
func printEgress(ctx context.Context, x *inv, w io.Writer, only string) error {
	cfg, err := egress.Load(x.cfg.EgressFile)
	if err != nil {
		return err
	}
	names := make([]string, 0, len(cfg.Pools))
	for n := range cfg.Pools {
		names = append(names, n)
	}
	slices.Sort(names)
	if only != "" {
		if !cfg.HasPool(only) {
			return usagef("--pool: no egress pool named %q in the egress file", only)
		}
		names = []string{only}
	}
	used := warmupReader(ctx, x)
	now := time.Now()
	fmt.Fprintf(w, "# egress: %s (UTC day %s)\n", x.cfg.EgressFile, egress.Day(now).Format(time.DateOnly))
	if len(names) == 0 {
		fmt.Fprintln(w, "egress_pool = (none)")
	}
	for _, n := range names {
		fmt.Fprintf(w, "egress_pool = %s\n", n)
		for _, e := range cfg.Pools[n].Entries {
			fmt.Fprintf(w, "egress_source = %s\n", sourceText(ctx, cfg.Sources[e.Source], e.Weight, now, used))
		}
	}
	return nil
}

// sourceText is one source of a pool as `shaping show` prints it.
func sourceText(ctx context.Context, s egress.Source, weight int, now time.Time, used func(context.Context, string) string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s weight=%d", s.Name, weight)
	addr, ehlo := "(system)", "(default)"
	if s.Address.IsValid() {
		addr = s.Address.String()
	}
	if s.EHLODomain != "" {
		ehlo = s.EHLODomain
	}
	fmt.Fprintf(&b, " source_address=%s ehlo_domain=%s", addr, ehlo)
	n, capped := s.Warmup.Cap(now)
	switch {
	case !capped && len(s.Warmup.Steps) > 0:
		b.WriteString(" warmup_cap=none  # warm-up schedule over")
	case !capped:
		b.WriteString(" warmup_cap=none")
	default:
		fmt.Fprintf(&b, " warmup_cap=%d warmup_used=%s", n, used(ctx, s.Name))
		if egress.Day(now).Before(s.Warmup.Start) {
			fmt.Fprintf(&b, "  # warm-up starts %s", s.Warmup.Start.Format(time.DateOnly))
		}
	}
	return b.String()
}

// warmupReader returns how many messages a source sent today by its
// warm-up count in the database, or "unknown" when the database cannot
// be read (said once on stderr).
func warmupReader(ctx context.Context, x *inv) func(context.Context, string) string {
	a, err := x.app(ctx)
	if err != nil {
		noted := false
		return func(context.Context, string) string {
			if !noted {
				fmt.Fprintf(x.stderr, "note: warm-up counts unknown: %v\n", err)
				noted = true
			}
			return "unknown"
		}
	}
	counter := store.NewRateCounter(a.DB)
	day := egress.Day(time.Now())
	return func(ctx context.Context, source string) string {
		n, err := counter.Get(ctx, delivery.WarmupKey(source), day)
		if err != nil {
			return "unknown"
		}
		return fmt.Sprint(n)
	}
}
