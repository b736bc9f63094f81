package domain

import (
	"log/slog"
	"time"

	"github.com/postline/postline/internal/background"
)

// claimSweep is how often the sweeper deletes unverified domain claims
// past their time. Reads already treat an expired claim as gone, so the
// sweep only frees the rows; a few minutes late costs nothing.
const claimSweep = 5 * time.Minute

// NewClaimSweeper returns the loop that deletes expired claims
// (DeleteExpiredClaims) in the background: at Start, then every
// claimSweep until Stop.
func (s *Service) NewClaimSweeper() *background.Loop {
	return background.NewSweeper(claimSweep, background.Sweep{Run: s.DeleteExpiredClaims, Level: slog.LevelInfo,
		Failed: "deleting expired domain claims failed", Done: "deleted expired domain claims", Logger: s.cfg.Logger})
}
