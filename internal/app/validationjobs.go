package app

import (
	"context"
	"strconv"
	"time"

	"github.com/postline/postline/internal/store"
	"github.com/postline/postline/internal/validation"
)

// openValidationJobs builds the list-cleaning service: jobs validate with
// the account's own history, and each address takes one unit of the
// account's hourly validation budget (shared with the API).
func (a *App) openValidationJobs() {
	perHour := a.Config.RateValidationPerHour
	budget := func(ctx context.Context, accountID int64) (bool, time.Time) {
		res, err := a.Limiter.Allow(ctx, "validation:"+strconv.FormatInt(accountID, 10), perHour, time.Hour)
		if err != nil {
			return true, time.Time{} // as in the API: a counter outage lets work through
		}
		return res.Allowed, res.Reset
	}
	a.ValidationJobs = validation.NewJobs(store.NewValidationJobs(a.DB), a.Validator, budget,
		validation.JobsConfig{Logger: a.Logger, Lease: a.Config.ValidationJobLease, MaxOpen: a.Config.ValidationJobsPerAccount})
}
