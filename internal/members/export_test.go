package members

import "context"

// BeatForTest beats r once now.
func BeatForTest(ctx context.Context, r *Registry) { r.beat(ctx) }
