package shaping

import (
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/BurntSushi/toml"
)

// sectionKind says which keys a section accepts.
type sectionKind uint8

const (
	kindDefault sectionKind = iota
	kindDomain
	kindProvider
)

// section is one table of one file, as written.
type section struct {
	name        string // "default", the domain (lowercase), or the provider
	file        string
	line        int
	limits      Limits
	mxRollup    bool // domains only; default true
	replaceBase bool
	automation  []Rule
	sources     map[string]Limits
	// Providers only.
	match                   []match
	providerConnectionLimit Limit
	providerMaxMessageRate  Rate
}

type matchKind uint8

const (
	matchMXSuffix matchKind = iota
	matchDomainSuffix
	matchHostName
)

var matchKinds = map[string]matchKind{"MXSuffix": matchMXSuffix, "DomainSuffix": matchDomainSuffix, "HostName": matchHostName}

// match is one entry of a provider's match list, its value lowercase
// without a trailing dot.
type match struct {
	kind  matchKind
	value string
}

// file is one parsed shaping file.
type file struct {
	path      string
	def       *section
	domains   []*section // in file order
	providers []*section // in file order
	warnings  []string
	unknown   []string // keys Postline does not implement, "PATH:LINE: KEY"
}

// decoder walks one file's TOML. Values are decoded from toml.Primitive
// so that each error can name its key and line.
type decoder struct {
	path     string
	md       toml.MetaData
	lines    []string
	headers  map[string][]int // array-of-tables key → the lines of its [[headers]], in order
	children map[string][]string
	f        *file
}

// where locates a value: its path for messages, its primitive, and, inside
// an array-of-tables element, which element (BurntSushi keeps one position
// per key path, the last element's, so elements are located by their
// [[header]] lines instead).
type where struct {
	path []string
	prim toml.Primitive
	elem *elemRef
}

type elemRef struct {
	array toml.Key
	index int
	depth int // len(path) of the element itself
}

func (w where) child(name string, p toml.Primitive) where {
	return where{path: append(slices.Clip(w.path), name), prim: p, elem: w.elem}
}

// parseFile parses one shaping file. Values Postline cannot use are a
// *FileError; keys it does not implement and rules it cannot run are
// warnings in the result.
func parseFile(path string, data []byte) (*file, error) {
	var top map[string]toml.Primitive
	md, err := toml.Decode(string(data), &top)
	if err != nil {
		var pe toml.ParseError
		if errors.As(err, &pe) {
			return nil, &FileError{Path: path, Line: pe.Position.Line, Key: pe.LastKey, Err: errors.New(pe.Message)}
		}
		return nil, &FileError{Path: path, Err: err}
	}
	d := &decoder{path: path, md: md, lines: strings.Split(string(data), "\n"), f: &file{path: path}}
	d.indexKeys()
	for _, name := range d.order(nil, top) {
		w := where{path: []string{name}, prim: top[name]}
		switch name {
		case "provider":
			if err := d.providers(w); err != nil {
				return nil, err
			}
		case "default":
			s, err := d.section(kindDefault, "default", w)
			if err != nil {
				return nil, err
			}
			d.f.def = s
		default:
			s, err := d.section(kindDomain, normalizeName(name), w)
			if err != nil {
				return nil, err
			}
			if !strings.Contains(s.name, ".") {
				d.warnf(w, "domain %q is a single DNS label: quote dotted domains in section names, [\"%s.com\"], "+
					"or the dots make nested tables", name, name)
			}
			d.f.domains = append(d.f.domains, s)
		}
	}
	return d.f, nil
}

func (d *decoder) providers(w where) error {
	tbl, err := d.table(w)
	if err != nil {
		return err
	}
	for _, name := range d.order(toml.Key{"provider"}, tbl) {
		s, err := d.section(kindProvider, name, w.child(name, tbl[name]))
		if err != nil {
			return err
		}
		d.f.providers = append(d.f.providers, s)
	}
	return nil
}

// section parses a default, domain or provider table.
func (d *decoder) section(kind sectionKind, name string, w where) (*section, error) {
	tbl, err := d.table(w)
	if err != nil {
		return nil, err
	}
	s := &section{name: name, file: d.path, line: d.line(w), mxRollup: true}
	for _, k := range d.order(toml.Key(w.path), tbl) {
		kw := w.child(k, tbl[k])
		var err error
		switch {
		case k == "automation":
			s.automation, err = d.rules(kind, name, kw)
		case k == "sources" && kind != kindDefault:
			s.sources, err = d.sources(kw)
		case k == "replace_base":
			s.replaceBase, err = decodeAs(d, kw, parseBool)
		case k == "mx_rollup" && kind == kindDomain:
			s.mxRollup, err = decodeAs(d, kw, parseBool)
		case k == "match" && kind == kindProvider:
			s.match, err = decodeAs(d, kw, parseMatches)
		case k == "provider_connection_limit" && kind == kindProvider:
			s.providerConnectionLimit, err = decodeAs(d, kw, ParseLimit)
		case k == "provider_max_message_rate" && kind == kindProvider:
			s.providerMaxMessageRate, err = decodeAs(d, kw, parseRateValue)
		default:
			err = d.limit(&s.limits, kw)
		}
		if err != nil {
			return nil, err
		}
	}
	if s.line == 0 && len(s.automation) > 0 { // a table made only by its [[...automation]] headers
		s.line = s.automation[0].Line
	}
	return s, nil
}

// limit parses a per-site key into l, or notes a key Postline does not
// implement.
func (d *decoder) limit(l *Limits, w where) error {
	k, ok := limitKeyNamed(w.path[len(w.path)-1])
	if !ok {
		d.unknownKey(w)
		return nil
	}
	_, err := decodeAs(d, w, func(v any) (struct{}, error) { return struct{}{}, k.parse(v, l) })
	return err
}

// sources parses "DOMAIN".sources."SOURCE" tables.
func (d *decoder) sources(w where) (map[string]Limits, error) {
	tbl, err := d.table(w)
	if err != nil {
		return nil, err
	}
	out := make(map[string]Limits, len(tbl))
	for _, src := range d.order(toml.Key(w.path), tbl) {
		sw := w.child(src, tbl[src])
		keys, err := d.table(sw)
		if err != nil {
			return nil, err
		}
		var l Limits
		for _, k := range d.order(toml.Key(sw.path), keys) {
			if err := d.limit(&l, sw.child(k, keys[k])); err != nil {
				return nil, err
			}
		}
		out[src] = l
	}
	return out, nil
}

func parseMatches(v any) ([]match, error) {
	list, ok := v.([]any)
	if !ok {
		if maps, ok := v.([]map[string]any); ok {
			for _, m := range maps {
				list = append(list, m)
			}
		} else {
			return nil, fmt.Errorf("want a list such as [{MXSuffix=\".google.com\"}], got %s", describe(v))
		}
	}
	out := make([]match, 0, len(list))
	for _, item := range list {
		m, ok := item.(map[string]any)
		if !ok || len(m) != 1 {
			return nil, fmt.Errorf("each entry is one of {MXSuffix=\"...\"}, {DomainSuffix=\"...\"} or {HostName=\"...\"}, got %s", describe(item))
		}
		for k, val := range m {
			kind, known := matchKinds[k]
			s, isString := val.(string)
			if !known || !isString || normalizeName(s) == "" {
				return nil, fmt.Errorf("each entry is one of {MXSuffix=\"...\"}, {DomainSuffix=\"...\"} or {HostName=\"...\"}, got {%s=%s}", k, describe(val))
			}
			out = append(out, match{kind: kind, value: normalizeName(s)})
		}
	}
	return out, nil
}

// table decodes a value that must be a table.
func (d *decoder) table(w where) (map[string]toml.Primitive, error) {
	// BurntSushi decodes a non-table into a map as an empty map: check.
	var tbl map[string]toml.Primitive
	if _, ok := d.raw(w).(map[string]any); !ok || d.md.PrimitiveDecode(w.prim, &tbl) != nil {
		return nil, d.fail(w, fmt.Errorf("want a table, got %s", describe(d.raw(w))))
	}
	return tbl, nil
}

// raw decodes a value as TOML gives it: string, int64, float64, bool,
// []any, map[string]any, []map[string]any or a date.
func (d *decoder) raw(w where) any {
	var v any
	d.md.PrimitiveDecode(w.prim, &v) //nolint:errcheck // decoding into any cannot fail
	return v
}

// decodeAs parses a value with parse; its error names the key and line.
func decodeAs[T any](d *decoder, w where, parse func(any) (T, error)) (T, error) {
	v, err := parse(d.raw(w))
	if err != nil {
		return v, d.fail(w, err)
	}
	return v, nil
}

func (d *decoder) fail(w where, err error) error {
	return &FileError{Path: d.path, Line: d.line(w), Key: keyPath(w.path...), Err: err}
}

func (d *decoder) warnf(w where, format string, args ...any) {
	d.f.warnings = append(d.f.warnings, d.place(w)+": "+fmt.Sprintf(format, args...))
}

func (d *decoder) unknownKey(w where) {
	d.f.unknown = append(d.f.unknown, d.place(w))
}

// place is "PATH:LINE: KEY".
func (d *decoder) place(w where) string {
	if line := d.line(w); line > 0 {
		return fmt.Sprintf("%s:%d: %s", d.path, line, keyPath(w.path...))
	}
	return fmt.Sprintf("%s: %s", d.path, keyPath(w.path...))
}

// normalizeName lowercases a domain or host name and drops a trailing dot.
func normalizeName(s string) string {
	return strings.TrimSuffix(strings.ToLower(strings.TrimSpace(s)), ".")
}
