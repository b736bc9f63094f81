package shaping

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// writeFile writes a shaping file in a temporary directory.
func writeFile(t *testing.T, dir, name, text string) string {
	t.Helper()
	p := filepath.Join(dir, name)
	if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// loadText loads one file with the given text.
func loadText(t *testing.T, text string) (*Rules, error) {
	t.Helper()
	return Load(writeFile(t, t.TempDir(), "shaping.toml", text))
}

func TestBadValuesNameFileLineAndKey(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name, text string
		line       int
		key, why   string
	}{
		{"too many recipients a transaction", `["default"]
max_recipients_per_transaction = 5000
`, 2, `default.max_recipients_per_transaction`, "at most 1000"},
		{"rate without unit", `["default"]
connection_limit = 10
max_message_rate = "100"
`, 3, `default.max_message_rate`, "want a rate"},
		{"limit zero in a domain", `
["example.com"]
connection_limit = 0
`, 3, `"example.com".connection_limit`, "at least 1"},
		{"bad tls mode in a provider", `[provider."big"]
match = [{MXSuffix = ".big.example"}]
enable_tls = "Maybe"
`, 3, `provider.big.enable_tls`, "OpportunisticInsecure"},
		{"bad match", `[provider."big"]
match = [{MXPrefix = "mx."}]
`, 2, `provider.big.match`, "MXSuffix"},
		{"bad source value", `["example.com"]
connection_limit = 3

["example.com".sources."ip-1"]
max_deliveries_per_connection = "many"
`, 5, `"example.com".sources.ip-1.max_deliveries_per_connection`, "whole number"},
		{"regex of the second rule", `["example.com"]
connection_limit = 3

[["example.com".automation]]
regex = "fine"
action = "Suspend"
duration = "1h"

[["example.com".automation]]
action = "Suspend"
regex = "unclosed ("
duration = "1h"

[["example.com".automation]]
regex = "also fine"
action = "Suspend"
duration = "1h"
`, 11, `"example.com".automation[1].regex`, "missing closing )"},
		{"rule without duration", `[["default".automation]]
regex = "x"
action = "Suspend"
`, 1, `default.automation[0]`, "needs duration"},
		{"unknown action", `[["default".automation]]
regex = "x"
action = "Explode"
duration = "1h"
`, 3, `default.automation[0].action`, `"Explode"`},
		{"SetConfig with a bad value", `[[provider."p".automation]]
regex = "x"
action = {SetConfig = {name = "max_message_rate", value = 5}}
duration = "1h"
`, 3, `provider.p.automation[0].action`, "SetConfig max_message_rate"},
		{"bad trigger", `[["default".automation]]
regex = "x"
action = "Suspend"
duration = "1h"
trigger = {Threshold = "often"}
`, 5, `default.automation[0].trigger`, "want a rate"},
		{"bad duration phrase", `[["default".automation]]
regex = "x"
action = "Suspend"
duration = "a while"
`, 4, `default.automation[0].duration`, "duration"},
		{"TOML syntax", `["default"]
connection_limit = 10
max_message_rate = "100/s
`, 3, "", "newline"},
		{"section that is not a table", `"example.com" = 5
`, 1, `"example.com"`, "want a table"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			dir := t.TempDir()
			path := writeFile(t, dir, "bad.toml", c.text)
			_, err := Load(path)
			var fe *FileError
			if !errors.As(err, &fe) {
				t.Fatalf("Load = %v, want a *FileError", err)
			}
			if fe.Path != path || fe.Line != c.line || (c.key != "" && fe.Key != c.key) || !strings.Contains(fe.Err.Error(), c.why) {
				t.Errorf("error %q: got path %s line %d key %s; want %s line %d key %s, message with %q",
					err, fe.Path, fe.Line, fe.Key, path, c.line, c.key, c.why)
			}
			if !strings.Contains(err.Error(), path) {
				t.Errorf("message %q does not name the file", err)
			}
		})
	}
}

func TestUnimplementedKeysAreWarningsNotErrors(t *testing.T) {
	t.Parallel()
	r, err := loadText(t, `["default"]
connection_limit = 10
data_timeout = "30s"
max_ready = 1000

["example.com"]
max_deliveries_per_connection = 5
remember_broken_tls = "3 days"

[["example.com".automation]]
regex = "x"
action = "Suspend"
duration = "1h"
match_internal = true
rule_hash_salt = 1
`)
	if err != nil {
		t.Fatalf("unknown keys made the load fail: %v", err)
	}
	got := strings.Join(r.Unimplemented(), "\n")
	for _, want := range []string{":3: default.data_timeout", ":4: default.max_ready", `:8: "example.com".remember_broken_tls`,
		`"example.com".automation[0].rule_hash_salt`} {
		if !strings.Contains(got, want) {
			t.Errorf("Unimplemented() = %q, missing %q", got, want)
		}
	}
	s := r.For("example.com", []string{"mx.example.com"}, "")
	if s.ConnectionLimit.N != 10 || s.MaxDeliveriesPerConnection != 5 || len(s.Automation) != 1 || !s.Automation[0].MatchInternal {
		t.Errorf("the implemented keys beside them did not apply: %+v", s)
	}
}

func TestRulesPostlineCannotRunAreDroppedWithAWarning(t *testing.T) {
	t.Parallel()
	r, err := loadText(t, `[["default".automation]]
regex = "(?<=foo)bar"
action = "Suspend"
duration = "1h"

[["default".automation]]
regex = "kept"
action = "Bounce"
duration = "1h"

[["default".automation]]
regex = ["(\\w)\\1", "also kept"]
action = ["Suspend", "SuspendCampaign", {SetDomainConfig = {name = "connection_limit", value = 1}}, {SetConfig = {name = "max_ready", value = 5}}]
duration = "1h"
`)
	if err != nil {
		t.Fatal(err)
	}
	s := r.For("example.com", nil, "")
	if len(s.Automation) != 1 {
		t.Fatalf("rules = %v; want only the third rule, with what of it Postline can run", s.Automation)
	}
	rule := s.Automation[0]
	if len(rule.Regex) != 1 || rule.Regex[0] != "also kept" || len(rule.Actions) != 1 || rule.Actions[0].Kind != ActionSuspend {
		t.Errorf("rule = %+v; want regex [also kept] and action Suspend", rule)
	}
	warnings := strings.Join(r.Warnings(), "\n")
	for _, want := range []string{"default.automation[0]: rule dropped", "default.automation[1]: rule dropped", "Bounce",
		"SuspendCampaign ignored", "SetDomainConfig ignored", "SetConfig max_ready ignored", `regex "(\\w)\\1"`} {
		if !strings.Contains(warnings, want) {
			t.Errorf("warnings %q lack %q", warnings, want)
		}
	}
}

func TestSingleLabelDomainWarns(t *testing.T) {
	t.Parallel()
	r, err := loadText(t, `[gmail.com]
connection_limit = 3
`)
	if err != nil {
		t.Fatal(err)
	}
	if w := strings.Join(r.Warnings(), "\n"); !strings.Contains(w, `domain "gmail" is a single DNS label`) {
		t.Errorf("warnings = %q; want the hint about quoting", w)
	}
}

func TestMissingFileIsAnError(t *testing.T) {
	t.Parallel()
	_, err := Load(filepath.Join(t.TempDir(), "nope.toml"))
	if !errors.Is(err, os.ErrNotExist) {
		t.Errorf("Load(missing) = %v, want not-exist", err)
	}
}
