package domain

import (
	"context"
	"log/slog"
	"time"

	"github.com/postline/postline/internal/background"
)

// recheckPass is how often the rechecker looks for verified domains due
// for a re-check of their DNS records (each pass takes RecheckBatch at
// most): a day's re-checks of 14,400 domains.
const recheckPass = time.Minute

// NewRechecker returns the loop that looks up the records of verified
// domains once every (--domain-recheck-interval, positive) each, a few at
// a time (RecheckDue), in the background: at Start, then every
// recheckPass (or every, when shorter) until Stop. A failed check leaves
// the domain verified; the console shows "records changed since
// verification".
func (s *Service) NewRechecker(every time.Duration) *background.Loop {
	recheck := func(ctx context.Context) (int64, error) {
		n, err := s.RecheckDue(ctx, every)
		return int64(n), err
	}
	return background.NewSweeper(min(recheckPass, every), background.Sweep{Run: recheck, Level: slog.LevelDebug,
		Failed: "re-checking domains' DNS records failed", Done: "re-checked domains' DNS records", Logger: s.cfg.Logger})
}
