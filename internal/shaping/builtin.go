package shaping

import (
	_ "embed"
	"fmt"
)

// builtinPath names the built-in rules in warnings and rule origins.
const builtinPath = "builtin.toml"

//go:embed builtin.toml
var builtinTOML []byte

// Builtin returns Postline's own rules for the large receivers (Google,
// Microsoft, Yahoo and AOL, Apple, Comcast, Mimecast, GMX and WEB.DE) and
// for their well-known throttling replies, used when no shaping file is
// given. Its text is BuiltinTOML.
func Builtin() *Rules {
	f, err := parseFile(builtinPath, builtinTOML)
	if err != nil { // the embedded file is checked by the tests
		panic(fmt.Sprintf("shaping: built-in rules: %v", err))
	}
	return compile([]*file{f})
}

// BuiltinTOML is the text of the built-in rules, a starting point for a
// shaping file of one's own.
func BuiltinTOML() []byte { return append([]byte(nil), builtinTOML...) }
