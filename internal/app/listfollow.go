package app

import (
	"context"

	"github.com/postline/postline/internal/store"
	"github.com/postline/postline/internal/suppression"
	"github.com/postline/postline/internal/validation"
)

// openListFollower wires the follower of the suppression lists to the
// store and to the two copies it keeps (suppression.ListFollower): the
// validation's bounce history and the intake's key index. It comes after
// the validator, whose history it keeps.
func (a *App) openListFollower() {
	sup := store.NewSuppressions(a.DB)
	a.historyCopy = suppression.SetCopy("bounce history", a.bounceHistory, suppression.Pager[store.BounceRow]{
		Page: sup.Bounces,
		Row:  func(r store.BounceRow) (int64, int64, string) { return r.ID, r.AccountID, r.Recipient },
	})
	keys := suppression.IndexCopy(a.keyIndex, suppression.Pager[store.SuppressionKey]{
		Page: sup.SuppressionKeys,
		Row:  func(r store.SuppressionKey) (int64, int64, string) { return r.ID, r.DomainID, r.Recipient },
	})
	a.ListFollower = suppression.NewListFollower(suppression.ListFollowerConfig{
		Removals: func(ctx context.Context) (int64, error) {
			return store.NewMeta(a.DB).Counter(ctx, store.MetaSuppressionsRemoved)
		},
		Copies: []*suppression.ListCopy{a.historyCopy, keys},
		Logger: a.Logger,
	})
}

// LoadBounceHistory fills the validator's bounce history from the database.
// serve does it at start (ListFollower); a CLI validation does it before
// validating.
func (a *App) LoadBounceHistory(ctx context.Context) error {
	return a.historyCopy.Load(ctx)
}

var (
	_ validation.BounceHistory = (*validation.History)(nil)
	_ suppression.Set          = (*validation.History)(nil)
)
