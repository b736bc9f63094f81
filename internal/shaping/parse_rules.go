package shaping

import (
	"errors"
	"fmt"
	"strconv"

	"github.com/BurntSushi/toml"
)

// rules parses a section's [[automation]] array. Rules Postline cannot run
// (every pattern needs fancy-regex, every action is one it does not carry
// out) are dropped with a warning.
func (d *decoder) rules(kind sectionKind, name string, w where) ([]Rule, error) {
	var elems []toml.Primitive
	if err := d.md.PrimitiveDecode(w.prim, &elems); err != nil {
		return nil, d.fail(w, fmt.Errorf("want an array of tables ([[%s]]), got %s", keyPath(w.path...), describe(d.raw(w))))
	}
	origin := "default"
	switch kind {
	case kindProvider:
		origin = "provider " + strconv.Quote(name)
	case kindDomain:
		origin = strconv.Quote(name)
	}
	var out []Rule
	for i, e := range elems {
		ew := where{path: append(w.path[:len(w.path):len(w.path)], fmt.Sprintf("[%d]", i)), prim: e,
			elem: &elemRef{array: toml.Key(w.path), index: i}}
		ew.elem.depth = len(ew.path)
		r, ok, err := d.rule(origin, ew)
		if err != nil {
			return nil, err
		}
		if ok {
			out = append(out, r)
		}
	}
	return out, nil
}

func (d *decoder) rule(origin string, w where) (Rule, bool, error) {
	tbl, err := d.table(w)
	if err != nil {
		return Rule{}, false, err
	}
	r := Rule{Origin: origin, File: d.path, Line: d.line(w)}
	var hasRegex, hasAction, dropped bool
	for _, k := range d.order(toml.Key(w.elem.array), tbl) {
		kw := w.child(k, tbl[k])
		var err error
		switch k {
		case "regex":
			hasRegex = true
			err = d.patterns(&r, kw)
		case "action":
			hasAction = true
			var acts []Action
			if acts, err = decodeAs(d, kw, d.actionsOf(kw)); err == nil {
				dropped = len(acts) == 0
				r.Actions = acts
			}
		case "duration":
			r.Duration, err = decodeAs(d, kw, ParseDuration)
		case "trigger":
			r.Threshold, err = decodeAs(d, kw, parseTrigger)
		case "match_internal":
			r.MatchInternal, err = decodeAs(d, kw, parseBool)
		default:
			d.unknownKey(kw)
		}
		if err != nil {
			return Rule{}, false, err
		}
	}
	switch {
	case !hasRegex:
		return Rule{}, false, d.fail(w, errors.New("an automation rule needs regex"))
	case !hasAction:
		return Rule{}, false, d.fail(w, errors.New("an automation rule needs action"))
	case r.Duration == 0:
		return Rule{}, false, d.fail(w, errors.New("an automation rule needs duration"))
	case len(r.matchers) == 0:
		d.warnf(w, "rule dropped: none of its patterns runs on Go's regexp")
		return Rule{}, false, nil
	case dropped:
		d.warnf(w, "rule dropped: none of its actions is one Postline carries out (Suspend, SuspendTenant, SetConfig)")
		return Rule{}, false, nil
	}
	r.ID = ruleID(r)
	return r, true, nil
}

// patterns compiles regex, one string or a list. A pattern only
// fancy-regex can run is dropped with a warning; a broken one is an error.
func (d *decoder) patterns(r *Rule, w where) error {
	var list []string
	switch v := d.raw(w).(type) {
	case string:
		list = []string{v}
	case []any:
		for _, p := range v {
			s, ok := p.(string)
			if !ok {
				return d.fail(w, fmt.Errorf("want a string or a list of strings, got an entry %s", describe(p)))
			}
			list = append(list, s)
		}
	default:
		return d.fail(w, fmt.Errorf("want a string or a list of strings, got %s", describe(v)))
	}
	for _, p := range list {
		m, err := compilePattern(p)
		if errors.Is(err, errUnsupportedRegex) {
			d.warnf(w, "pattern ignored: %v", err)
			continue
		}
		if err != nil {
			return d.fail(w, err)
		}
		r.Regex = append(r.Regex, p)
		r.matchers = append(r.matchers, m)
	}
	return nil
}

// actionsOf parses action: one action or a list. Actions Postline does
// not carry out are dropped with a warning.
func (d *decoder) actionsOf(w where) func(any) ([]Action, error) {
	return func(v any) ([]Action, error) {
		list, ok := v.([]any)
		if !ok {
			list = []any{v}
		}
		var out []Action
		for _, item := range list {
			a, ok, err := d.action(w, item)
			if err != nil {
				return nil, err
			}
			if ok {
				out = append(out, a)
			}
		}
		return out, nil
	}
}

func (d *decoder) action(w where, v any) (Action, bool, error) {
	const want = `want "Suspend", "SuspendTenant", {SetConfig={name="...", value=...}} or a list of them`
	switch v := v.(type) {
	case string:
		switch {
		case v == string(ActionSuspend) || v == string(ActionSuspendTenant):
			return Action{Kind: ActionKind(v)}, true, nil
		case unsupportedActions[v]:
			d.warnf(w, "action %s ignored: Postline does not carry it out", v)
			return Action{}, false, nil
		}
		return Action{}, false, fmt.Errorf("%s, got %q", want, v)
	case map[string]any:
		if len(v) != 1 {
			break
		}
		if sc, ok := v[string(ActionSetConfig)]; ok {
			return d.setConfig(w, sc)
		}
		for k := range v {
			if unsupportedActions[k] {
				d.warnf(w, "action %s ignored: Postline does not carry it out", k)
				return Action{}, false, nil
			}
		}
	}
	return Action{}, false, fmt.Errorf("%s, got %s", want, describe(v))
}

func (d *decoder) setConfig(w where, v any) (Action, bool, error) {
	m, ok := v.(map[string]any)
	name, isString := m["name"].(string)
	value, hasValue := m["value"]
	if !ok || !isString || !hasValue || len(m) != 2 {
		return Action{}, false, fmt.Errorf(`SetConfig wants {name="KEY", value=VALUE}, got %s`, describe(v))
	}
	k, ok := limitKeyNamed(name)
	if !ok {
		d.warnf(w, "action SetConfig %s ignored: Postline does not implement %s", name, name)
		return Action{}, false, nil
	}
	var l Limits
	if err := k.parse(value, &l); err != nil {
		return Action{}, false, fmt.Errorf("SetConfig %s: %w", name, err)
	}
	return Action{Kind: ActionSetConfig, Name: name, Value: k.show(l), Override: l}, true, nil
}

// parseTrigger parses trigger: "Immediate" (the zero Rate) or
// {Threshold="N/h"}.
func parseTrigger(v any) (Rate, error) {
	switch v := v.(type) {
	case string:
		if v == "Immediate" {
			return Rate{}, nil
		}
	case map[string]any:
		if t, ok := v["Threshold"]; ok && len(v) == 1 {
			return parseRateValue(t)
		}
	}
	return Rate{}, fmt.Errorf(`want "Immediate" or {Threshold="N/h"}, got %s`, describe(v))
}
