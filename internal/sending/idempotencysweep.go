package sending

import (
	"log/slog"
	"time"

	"github.com/postline/postline/internal/background"
)

// idempotencySweep is how often the sweeper deletes idempotency keys past
// IdempotencyKept: the API's, and one per message an inbound route
// forwarded to an address.
const idempotencySweep = 10 * time.Minute

// NewIdempotencySweeper returns the loop that deletes old idempotency keys
// (PruneIdempotencyKeys) in the background: at Start, then every
// idempotencySweep until Stop.
func (s *Service) NewIdempotencySweeper(logger *slog.Logger) *background.Loop {
	return background.NewSweeper(idempotencySweep, background.Sweep{Run: s.PruneIdempotencyKeys, Level: slog.LevelDebug,
		Failed: "deleting old idempotency keys failed", Done: "deleted old idempotency keys", Logger: logger})
}
