package main

import (
	"context"
	"flag"
	"fmt"
)

func setupCachePurge(*flag.FlagSet) runFunc {
	return func(ctx context.Context, x *inv) error {
		x.fields = map[string]string{"address": "ADDRESS", "domain": "DOMAIN"}
		target := ""
		if len(x.args) == 1 {
			target = x.args[0]
		}
		a, err := x.app(ctx)
		if err != nil {
			return err
		}
		n, err := a.PurgeValidationCache(ctx, target)
		if err != nil {
			return err
		}
		what := "every cached validation result"
		if target != "" {
			what = "cached validation results for " + target
		}
		fmt.Fprintf(x.stdout, "purged %s: %d removed; running servers drop their in-memory copies within seconds\n", what, n)
		return nil
	}
}
