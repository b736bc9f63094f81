package shaping

import (
	"fmt"
	"io"
	"log/slog"
	"os"
	"slices"
	"strings"
)

// Rules are shaping files merged in order. A Rules value is immutable and
// safe for concurrent use; a reload makes a new one.
type Rules struct {
	files    []string // nil for the built-in rules
	def      entry
	provs    []*provider
	rollup   []*section        // domain sections with mx_rollup = true, in load order
	byName   map[string][]int  // rollup domain → indexes into rollup
	bySite   map[string][]int  // resolved site name → indexes into rollup (ResolveSites)
	byDomain map[string]*entry // domain sections with mx_rollup = false, merged
	siteOf   map[string]string // rollup domain → its resolved site
	warnings []string
	unknown  []string
}

// entry is the merge of one scope's sections.
type entry struct {
	limits     Limits
	automation []Rule
	sources    map[string]Limits
}

// provider is the merge of one provider's sections.
type provider struct {
	name       string
	entry      entry
	match      []match
	connLimit  Limit
	msgRate    Rate
	firstPlace string
}

// mergeSection merges s over e as KumoMTA does: replace_base drops what
// earlier sections of the scope said; otherwise set keys override,
// sources merge key by key and automation rules accumulate.
func (e *entry) mergeSection(s *section) {
	if s.replaceBase {
		*e = entry{}
	}
	e.limits = e.limits.With(s.limits)
	e.automation = append(slices.Clip(e.automation), s.automation...)
	for src, l := range s.sources {
		if e.sources == nil {
			e.sources = map[string]Limits{}
		}
		e.sources[src] = e.sources[src].With(l)
	}
}

func (p *provider) mergeSection(s *section) {
	if s.replaceBase {
		p.match, p.connLimit, p.msgRate = nil, Limit{}, Rate{}
	}
	p.entry.mergeSection(s)
	p.match = append(slices.Clip(p.match), s.match...)
	if s.providerConnectionLimit.IsSet() {
		p.connLimit = s.providerConnectionLimit
	}
	if s.providerMaxMessageRate.IsSet() {
		p.msgRate = s.providerMaxMessageRate
	}
}

// Load reads the shaping files and merges them in order, later files over
// earlier ones. With no paths it returns the built-in rules. A file that
// cannot be read or used is an error (a *FileError when it is the file's
// content); keys Postline does not implement are only warnings (see
// Warnings and LogWarnings).
func Load(paths ...string) (*Rules, error) {
	if len(paths) == 0 {
		return Builtin(), nil
	}
	data, err := readFiles(paths)
	if err != nil {
		return nil, err
	}
	return loadData(paths, data)
}

// MaxFileSize bounds one shaping file. KumoMTA's default and community
// files are about 10 KB; the bound keeps a wrong path (a log, a disk
// image) from being read into memory every Interval by the Watcher.
const MaxFileSize = 8 << 20

func readFiles(paths []string) ([][]byte, error) {
	data := make([][]byte, len(paths))
	for i, p := range paths {
		var err error
		if data[i], err = readFile(p); err != nil {
			return nil, fmt.Errorf("shaping: %w", err)
		}
	}
	return data, nil
}

// readFile reads path, refusing one larger than MaxFileSize.
func readFile(path string) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, MaxFileSize+1))
	if err != nil {
		return nil, err
	}
	if len(b) > MaxFileSize {
		return nil, fmt.Errorf("%s: larger than %d bytes (8 MiB), the most a shaping file may have", path, MaxFileSize)
	}
	return b, nil
}

func loadData(paths []string, data [][]byte) (*Rules, error) {
	files := make([]*file, len(paths))
	for i, p := range paths {
		var err error
		if files[i], err = parseFile(p, data[i]); err != nil {
			return nil, err
		}
	}
	r := compile(files)
	r.files = slices.Clone(paths)
	return r, nil
}

// compile merges parsed files.
func compile(files []*file) *Rules {
	r := &Rules{byName: map[string][]int{}, byDomain: map[string]*entry{}}
	provs := map[string]*provider{}
	for _, f := range files {
		r.warnings = append(r.warnings, f.warnings...)
		r.unknown = append(r.unknown, f.unknown...)
		if f.def != nil {
			r.def.mergeSection(f.def)
		}
		for _, s := range f.domains {
			if s.mxRollup {
				r.byName[s.name] = append(r.byName[s.name], len(r.rollup))
				r.rollup = append(r.rollup, s)
				continue
			}
			e := r.byDomain[s.name]
			if e == nil {
				e = &entry{}
				r.byDomain[s.name] = e
			}
			e.mergeSection(s)
		}
		for _, s := range f.providers {
			p := provs[s.name]
			if p == nil {
				p = &provider{name: s.name, firstPlace: fileLine(s.file, s.line)}
				provs[s.name] = p
				r.provs = append(r.provs, p)
			}
			p.mergeSection(s)
		}
	}
	for _, p := range r.provs {
		if len(p.match) == 0 {
			r.warnings = append(r.warnings, fmt.Sprintf("%s: provider %q has no match entries, so it applies to no domain", p.firstPlace, p.name))
		}
	}
	return r
}

// fileLine is "PATH:LINE", or PATH when the line is unknown.
func fileLine(path string, line int) string {
	if line > 0 {
		return fmt.Sprintf("%s:%d", path, line)
	}
	return path
}

// Files are the files the rules were loaded from; nil for the built-in
// rules.
func (r *Rules) Files() []string { return slices.Clone(r.files) }

// Warnings are what loading noticed but did not refuse: rules Postline
// cannot run, single-label domain sections, providers without matches,
// rollup domains whose MX could not be resolved.
func (r *Rules) Warnings() []string { return slices.Clone(r.warnings) }

// Unimplemented lists the keys of the files that Postline does not
// implement and ignored, each as "PATH:LINE: KEY".
func (r *Rules) Unimplemented() []string { return slices.Clone(r.unknown) }

// LogWarnings logs the warnings, and every key Postline ignored in one
// entry, so a load says once what it did not take.
func (r *Rules) LogWarnings(log *slog.Logger) {
	if len(r.unknown) > 0 {
		log.Warn("shaping: ignoring keys Postline does not implement",
			"count", len(r.unknown), "keys", strings.Join(r.unknown, "; "))
	}
	for _, w := range r.warnings {
		log.Warn("shaping: " + w)
	}
}
