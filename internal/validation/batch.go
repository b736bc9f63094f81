package validation

import (
	"context"
	"slices"

	"golang.org/x/sync/errgroup"
)

// ValidateBatch validates emails and returns one Result per entry, in
// input order, with the counts of the package doc's Summary rules.
//
// Entries with the same cache key (or, for verdicts reached without DNS,
// the same input) are validated once and share the verdict, each keeping
// its own Email. Distinct entries run concurrently, at most
// Config.Concurrency at a time; cached ones cost a cache read. The first
// infrastructure error (Cache, BounceHistory, context) fails the batch.
//
// ValidateBatch uses no sending history; ValidateBatchAs names the account
// whose history counts, as ValidateAs does.
func (v *Validator) ValidateBatch(ctx context.Context, mode Mode, emails []string) ([]Result, Summary, error) {
	return v.ValidateBatchAs(ctx, NoAccount, mode, emails)
}

// ValidateBatchAs is ValidateBatch for account.
func (v *Validator) ValidateBatchAs(ctx context.Context, account int64, mode Mode, emails []string) ([]Result, Summary, error) {
	if err := mode.check(); err != nil {
		return nil, Summary{}, err
	}
	type group struct {
		c check
		r Result
	}
	var (
		groups []*group
		byKey  = make(map[string]*group, len(emails))
		of     = make([]*group, len(emails)) // entry → its group
	)
	for i, email := range emails {
		c := v.prepare(mode, email)
		c.account = account
		k := c.key
		if k == "" {
			k = "input:" + email // modes prefix real keys, so no clash
		}
		g, ok := byKey[k]
		if !ok {
			g = &group{c: c}
			byKey[k] = g
			groups = append(groups, g)
		}
		of[i] = g
	}

	eg, ectx := errgroup.WithContext(ctx)
	eg.SetLimit(v.concurrency)
	for _, g := range groups {
		eg.Go(func() error {
			var err error
			g.r, err = v.run(ectx, &g.c)
			return err
		})
	}
	if err := eg.Wait(); err != nil {
		return nil, Summary{}, err
	}

	results := make([]Result, len(emails))
	sum := Summary{Total: len(emails)}
	for i, g := range of {
		r := g.r
		r.Email = emails[i]
		r.Warnings = slices.Clone(r.Warnings)
		results[i] = r
		if r.IsValid {
			sum.Valid++
		} else {
			sum.Invalid++
		}
		if r.Cached {
			sum.Cached++
		} else {
			sum.Validated++
		}
	}
	return results, sum, nil
}
