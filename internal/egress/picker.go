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

// Pick is one choice of a Picker: the source, and what the choice changed
// in the round, for Undo.
type Pick struct {
	Source string
	delta  []int
}

// Next returns the next source, among those ok allows (nil: all), and
// false when ok allows none. Entries ok refuses take no part in the
// round, so the others keep their proportions among themselves.
func (p *Picker) Next(ok func(source string) bool) (string, bool) {
	pk, found := p.Take(ok)
	return pk.Source, found
}

// Take is Next, returning the Pick so that Undo can take it back.
func (p *Picker) Take(ok func(source string) bool) (Pick, bool) {
	best, total := -1, 0
	delta := make([]int, len(p.entries))
	for i, e := range p.entries {
		if ok != nil && !ok(e.Source) {
			continue
		}
		p.current[i] += e.Weight
		delta[i] = e.Weight
		total += e.Weight
		if best < 0 || p.current[i] > p.current[best] {
			best = i
		}
	}
	if best < 0 {
		return Pick{}, false
	}
	p.current[best] -= total
	delta[best] -= total
	return Pick{Source: p.entries[best].Source, delta: delta}, true
}

// Undo takes back a Pick of this Picker whose delivery did not go (it
// waited for its turn): the round is as if the pick had not been made,
// so the picks that lead to deliveries keep the weights' proportions
// whichever source's deliveries have to wait more often. Later picks
// may have happened in between; the round's values add up the same.
func (p *Picker) Undo(pk Pick) {
	if len(pk.delta) != len(p.current) {
		return // not a pick of this Picker
	}
	for i, d := range pk.delta {
		p.current[i] -= d
	}
}
