package store

import (
	"context"
	"time"

	"github.com/postline/postline/internal/event"
)

// HourlyCounts returns the domain's entries per hour and type for the
// hours starting at from (truncated to the hour) up to now, from the
// hourly counts kept beside the log: the console's charts never scan the
// log itself. Keys are the hours' starts (UTC).
func (e Events) HourlyCounts(ctx context.Context, domainID int64, from time.Time) (map[time.Time]map[event.Type]int, error) {
	rows, err := e.reader().QueryContext(ctx, `SELECT hour, event_type, SUM(n) FROM event_counts
		WHERE domain_id = $1 AND hour >= $2 GROUP BY hour, event_type`, domainID, hourOf(ms(from)))
	if err != nil {
		return nil, notFound(err, "event counts")
	}
	defer rows.Close()
	out := map[time.Time]map[event.Type]int{}
	for rows.Next() {
		var hour int64
		var t string
		var n int
		if err := rows.Scan(&hour, &t, &n); err != nil {
			return nil, notFound(err, "event counts")
		}
		h := fromMS(hour)
		if out[h] == nil {
			out[h] = map[event.Type]int{}
		}
		out[h][event.Type(t)] += n
	}
	return out, notFound(rows.Err(), "event counts")
}
