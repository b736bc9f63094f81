package egress

// Picker is one smooth weighted round robin over a pool's entries (the
// algorithm of nginx's upstream module): each pick adds every entry's
// weight to its current value, takes the largest, and subtracts the total
// from it. Over any run of total picks each entry is chosen weight times,
// spread out. Not safe for concurrent use.
type Picker struct {
	entries []Entry
	current []int
}

// NewPicker returns a Picker over entries.
func NewPicker(entries []Entry) *Picker {
	return &Picker{entries: entries, current: make([]int, len(entries))}
}

// Next returns the next source, among those ok allows (nil: all), and
// false when ok allows none. Entries ok refuses take no part in the
// round, so the others keep their proportions among themselves.
func (p *Picker) Next(ok func(source string) bool) (string, bool) {
	best, total := -1, 0
	for i, e := range p.entries {
		if ok != nil && !ok(e.Source) {
			continue
		}
		p.current[i] += e.Weight
		total += e.Weight
		if best < 0 || p.current[i] > p.current[best] {
			best = i
		}
	}
	if best < 0 {
		return "", false
	}
	p.current[best] -= total
	return p.entries[best].Source, true
}
