package shaping

import (
	"slices"
	"strconv"
	"strings"

	"github.com/BurntSushi/toml"
)

// indexKeys records each table's keys in file order, so sections are
// merged in the order they are written (BurntSushi decodes into maps).
func (d *decoder) indexKeys() {
	d.children = map[string][]string{}
	seen := map[string]bool{}
	for _, k := range d.md.Keys() {
		full := k.String()
		if seen[full] {
			continue
		}
		seen[full] = true
		parent := toml.Key(k[:len(k)-1]).String()
		d.children[parent] = append(d.children[parent], k[len(k)-1])
	}
}

// order returns tbl's keys in file order.
func (d *decoder) order(parent toml.Key, tbl map[string]toml.Primitive) []string {
	out := make([]string, 0, len(tbl))
	for _, k := range d.children[parent.String()] {
		if _, ok := tbl[k]; ok {
			out = append(out, k)
		}
	}
	if len(out) < len(tbl) { // keys the index missed: keep them, sorted
		var rest []string
		for k := range tbl {
			if !slices.Contains(out, k) {
				rest = append(rest, k)
			}
		}
		slices.Sort(rest)
		out = append(out, rest...)
	}
	return out
}

// line returns the 1-based line of the value at w, or 0 when unknown.
func (d *decoder) line(w where) int {
	if w.elem != nil {
		if n := d.elemLine(w); n > 0 {
			return n
		}
	}
	// BurntSushi keeps each key's line but only says it in errors.
	// Decoding into a type it does not support gives "toml: line N (last
	// key ...): unsupported type", which costs nothing; a decoding hook's
	// error (ParseError) would copy and split the whole file on every
	// call, which made a file of 4,000 sections take 20 s to load.
	var unsupported complex128
	err := d.md.PrimitiveDecode(w.prim, &unsupported)
	if err == nil {
		return 0
	}
	rest, ok := strings.CutPrefix(err.Error(), "toml: line ")
	if !ok {
		return 0
	}
	n, _ := strconv.Atoi(rest[:max(strings.IndexByte(rest, ' '), 0)])
	return n
}

// elemLine finds a value inside the index'th element of an array of
// tables: the element's [[header]] line, then the line of the element's
// key that holds the value. It returns 0 for arrays written inline.
func (d *decoder) elemLine(w where) int {
	if d.headers == nil {
		d.scanHeaders()
	}
	hdrs := d.headers[w.elem.array.String()]
	if w.elem.index >= len(hdrs) {
		return 0
	}
	start := hdrs[w.elem.index]
	if len(w.path) <= w.elem.depth {
		return start
	}
	leaf := w.path[w.elem.depth]
	for i := start; i < len(d.lines); i++ { // start is 1-based: the line after the header
		line := strings.TrimSpace(d.lines[i])
		if strings.HasPrefix(line, "[") {
			break
		}
		if k, _, ok := strings.Cut(line, "="); ok && strings.Trim(strings.TrimSpace(k), `"'`) == leaf {
			return i + 1
		}
	}
	return start
}

// scanHeaders finds every [[header]] line and the key it names.
func (d *decoder) scanHeaders() {
	d.headers = map[string][]int{}
	for i, line := range d.lines {
		if !strings.HasPrefix(strings.TrimSpace(line), "[[") {
			continue
		}
		var m map[string]any
		md, err := toml.Decode(line, &m)
		if err != nil {
			continue
		}
		keys := md.Keys()
		if len(keys) == 0 {
			continue
		}
		k := keys[len(keys)-1].String()
		d.headers[k] = append(d.headers[k], i+1)
	}
}
