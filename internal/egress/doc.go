// Package egress reads the egress file (--egress-file): the local
// addresses mail goes out from (sources), how they are grouped (pools),
// and each source's warm-up schedule. The format is KumoMTA's sources
// helper, with pools listing their entries:
//
//	[source."ip-1"]
//	source_address = "192.0.2.10"
//	ehlo_domain = "mta1.example.com"
//	warmup = ["50/day", "100/day", "500/day"]
//	warmup_start = "2025-01-01"
//
//	[pool."main"]
//	entries = [{name = "ip-1", weight = 2}, {name = "ip-2"}]
//
// A pool spreads deliveries over its sources by smooth weighted round
// robin (as nginx does: over any window of the weights' sum, each source
// gets its weight's share, interleaved rather than in runs), one rotation
// per site (Picker; a pick whose delivery waits is taken back with Undo).
// A source with a warm-up schedule may send, on the n-th UTC day from
// warmup_start (the first is day 0), the n-th entry's count, and without
// limit once the schedule has run out; before warmup_start it sends
// nothing. The count is kept by the caller (in the
// database, so that every process shares it).
package egress
