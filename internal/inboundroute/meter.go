package inboundroute

// MaxMatchCost bounds the matching work of one evaluation (one recipient
// at RCPT, or one recipient with the message's header after DATA), in RE2
// instructions times bytes of text: each pattern's size times the length
// of each value it is matched against (times its captures plus one when
// it matches, since RE2 carries every capture along each thread). The
// limits on one pattern alone do not bound a message's cost: 1,000
// routes of 10 filters of 3,000 instructions against 100 header values of
// 16 KiB each is 5e13. This bound is at most about 1.5 s of one core,
// and far above what ordinary routes take (a 50-instruction pattern
// against a 50-byte recipient is 2,550, so 1,000 routes of such filters
// cost 2.6e6).
const MaxMatchCost = 50_000_000

// Meter counts the matching work of one evaluation against MaxMatchCost.
// The zero value is a fresh meter; a nil *Meter counts nothing.
type Meter struct {
	spent int64
	over  bool
}

// charge takes cost from the meter; false (and the meter spent from then
// on) when it would pass MaxMatchCost.
func (m *Meter) charge(cost int64) bool {
	if m == nil {
		return true
	}
	if m.over || m.spent+cost > MaxMatchCost {
		m.over = true
		return false
	}
	m.spent += cost
	return true
}

// Spent reports that a match was refused for the bound: the evaluation
// is incomplete and must not be acted on.
func (m *Meter) Spent() bool { return m != nil && m.over }
