package emailaddr

import (
	"bufio"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"
)

// FuzzParse checks that Parse never panics and that Normalized keeps its
// contract on everything Parse accepts. The seeds are every conformance
// vector plus the table-test inputs.
func FuzzParse(f *testing.F) {
	paths, _ := filepath.Glob("../../testdata/conformance/*.jsonl")
	for _, path := range paths {
		file, err := os.Open(path)
		if err != nil {
			f.Fatal(err)
		}
		sc := bufio.NewScanner(file)
		sc.Buffer(make([]byte, 0, 64<<10), 1<<20)
		for sc.Scan() {
			var v struct {
				Email string `json:"email"`
			}
			if json.Unmarshal(sc.Bytes(), &v) == nil {
				f.Add(v.Email)
			}
		}
		file.Close()
	}
	for _, s := range benchAddresses {
		f.Add(s)
	}
	// Edges of normalization: IDNA, literal canonical forms, dropped CR/LF.
	for _, s := range []string{
		"a@faß.de", "a@ΣΑΣ.gr", "a@xn--mller-kva.DE", "a@[IPv6:::ffff:1.2.3.4]",
		"a@[IPv6:1:2:3:4:5:6:7::]", "a@[001.2.3.\\4]", "a@[a\\\nb]", "\"\\\r\"@x",
		"\"a\r\n\tb\"@x", "(\\\n)a@x", "a@[ \r\n \r\n ]", "\"\\\x00\x7f\"@x",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		a, err := Parse(s)
		if err != nil {
			if _, ok := err.(*ParseError); !ok {
				t.Fatalf("Parse(%q) error %T, want *ParseError", s, err)
			}
			return
		}
		checkRoundTrip(t, s, a)
	})
}
