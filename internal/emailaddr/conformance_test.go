package emailaddr

import (
	"bufio"
	"encoding/base64"
	"encoding/json"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// verdict is what a vector expects of one mode.
type verdict int

const (
	unasserted verdict = iota
	wantValid
	wantInvalid
)

func (v verdict) String() string {
	return [...]string{"unasserted", "valid", "invalid"}[v]
}

// vector is one line of testdata/conformance/*.jsonl (both shapes).
type vector struct {
	Email       string `json:"email"`
	EmailBase64 string `json:"email_base64"`
	// isemail
	ID        int    `json:"id"`
	Category  string `json:"category"`
	Diagnosis string `json:"diagnosis"`
	// egulias
	Expect     string `json:"expect"`
	Provider   string `json:"provider"`
	Validation string `json:"validation"`
}

func (v vector) input(t *testing.T) string {
	if v.EmailBase64 == "" {
		return v.Email
	}
	b, err := base64.StdEncoding.DecodeString(v.EmailBase64)
	if err != nil {
		t.Fatalf("bad email_base64 %q: %v", v.EmailBase64, err)
	}
	return string(b)
}

// isemailVerdicts maps an isemail category (and, for RFC5322, diagnosis) to
// our standard and strict verdicts: the table in testdata/conformance/README.md.
func isemailVerdicts(v vector) (std, strict verdict) {
	switch v.Category {
	case "ISEMAIL_VALID_CATEGORY", "ISEMAIL_DNSWARN":
		return wantValid, wantValid
	case "ISEMAIL_RFC5321", "ISEMAIL_CFWS", "ISEMAIL_DEPREC":
		return wantValid, wantInvalid
	case "ISEMAIL_RFC5322":
		switch v.Diagnosis {
		case "ISEMAIL_RFC5322_DOMAIN", "ISEMAIL_RFC5322_DOMAIN_TOOLONG", "ISEMAIL_RFC5322_LABEL_TOOLONG":
			return wantInvalid, wantInvalid
		}
		return wantValid, wantInvalid
	case "ISEMAIL_ERR":
		return wantInvalid, wantInvalid
	}
	return unasserted, unasserted
}

// eguliasVerdicts maps egulias expectations. RFCValidation "valid" rows do
// not assert the absence of warnings, so their strict verdict is open;
// NoRFCWarningsValidation rows state strict verdicts only. DNS and spoof
// rows are checked for syntax only: their "valid" rows must parse, their
// "invalid" rows fail for non-syntax reasons and are not asserted.
func eguliasVerdicts(v vector) (std, strict verdict) {
	switch {
	case v.Validation == "NoRFCWarningsValidation":
		if v.Expect == "valid" {
			return unasserted, wantValid
		}
		return unasserted, wantInvalid
	case v.Validation != "RFCValidation":
		if v.Expect == "valid" {
			return wantValid, unasserted
		}
		return unasserted, unasserted
	case v.Expect == "invalid":
		return wantInvalid, wantInvalid
	case v.Expect == "warning":
		return wantValid, wantInvalid
	}
	return wantValid, unasserted
}

// exception is a vector on which we deliberately disagree with upstream.
// The same table, with the reasons in full, is in doc.go.
type exception struct {
	email  string // guards against the line moving
	std    verdict
	strict verdict
	why    string
}

var exceptions = map[string]exception{
	"egulias-rfc.jsonl:6": {"fab\\ ien@symfony.com", wantInvalid, wantInvalid,
		"a quoted-pair outside a quoted string is not RFC 5322 (isemail #20 agrees)"},
	"egulias-rfc.jsonl:28": {"\"\r\"@invalid.example.com", wantInvalid, wantInvalid,
		"bare CR is never legal; isemail #129 rates it ERR_CR_NO_LF"},
	"egulias-rfc.jsonl:47": {"\"test\".\"test\"@iana.org", wantValid, wantInvalid,
		"obs-local-part: isemail DEPREC (#54) = valid with warning"},
	"egulias-rfc.jsonl:48": {"\"test\".test@iana.org", wantValid, wantInvalid,
		"obs-local-part: isemail DEPREC (#56) = valid with warning"},
	"egulias-rfc.jsonl:92": {"username@ example . com", wantValid, wantInvalid,
		"obs-domain CFWS: isemail DEPREC (#86 test@ iana .com)"},
	"egulias-rfc.jsonl:93": {"username@ example.com", wantValid, wantInvalid,
		"CFWS after @: isemail DEPREC_CFWS_NEAR_AT (#86, #93)"},
	"egulias-rfc.jsonl:113": {"invalidipv4@[127.\\0.0.0]", wantValid, wantInvalid,
		"a quoted-pair in a literal is obs-dtext, valid with warning (isemail #115-117)"},
	"egulias-rfc.jsonl:116": {"test@test. example.com", wantValid, wantInvalid,
		"obs-domain CFWS: isemail DEPREC (#86)"},
	"egulias-rfc.jsonl:174": {"example@symƒony.com", wantValid, wantValid,
		"upstream marks it skipped; ƒ (U+0192) is PVALID in IDNA 2008"},
	"isemail.jsonl:40": {"a@" + label63 + "." + label63 + "." + label63 + "." + label63[:59] + ".hij",
		wantInvalid, wantInvalid,
		"255-octet domain: isemail uses RFC 5321's 255-octet wire limit; text form allows 253"},
	"isemail-original.jsonl:279": {"test@xn--example.com", wantInvalid, wantInvalid,
		"xn--example is not a valid A-label (RFC 5890 fake A-label); isemail does not check IDNA"},
	"isemail.jsonl:5": {"test@io", wantValid, wantInvalid,
		"VALID only because io had an MX in 2011 (DNS-derived); dotless_domain is an RFC 5321 warning (egulias TLD)"},
}

// label63 is a 63-octet label as isemail's long-name vectors write it.
const label63 = "abcdefghijklmnopqrstuvwxyzabcdefghijklmnopqrstuvwxyzabcdefghikl"

// result is the outcome of one file.
type result struct {
	stdPass, stdTotal, strictPass, strictTotal int
	upstreamPass, upstreamTotal                int // checks agreeing with upstream, exceptions ignored
	excepted                                   int
}

func TestConformance(t *testing.T) {
	t.Parallel()
	files, err := filepath.Glob("../../testdata/conformance/*.jsonl")
	if err != nil || len(files) == 0 {
		t.Fatalf("no conformance vectors found: %v", err)
	}
	for _, path := range files {
		name := filepath.Base(path)
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			r := runVectors(t, path, name)
			t.Logf("%s: standard %d/%d, strict %d/%d; %d exceptions; agreement with upstream %d/%d checks",
				name, r.stdPass, r.stdTotal, r.strictPass, r.strictTotal, r.excepted,
				r.upstreamPass, r.upstreamTotal)
		})
	}
}

func runVectors(t *testing.T, path, name string) result {
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var r result
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 0, 64<<10), 1<<20)
	for line := 1; sc.Scan(); line++ {
		var v vector
		if err := json.Unmarshal(sc.Bytes(), &v); err != nil {
			t.Fatalf("%s:%d: %v", name, line, err)
		}
		in := v.input(t)
		std, strict := eguliasVerdicts(v)
		if strings.HasPrefix(name, "isemail") {
			std, strict = isemailVerdicts(v)
		}
		key := name + ":" + strconv.Itoa(line)
		upStd, upStrict := std, strict
		if ex, ok := exceptions[key]; ok {
			if ex.email != in {
				t.Errorf("%s: exception is for %q but the vector is %q", key, ex.email, in)
			}
			std, strict = ex.std, ex.strict
			r.excepted++
		}
		a, err := Parse(in)
		stdGot, strictGot := wantInvalid, wantInvalid
		if err == nil {
			stdGot = wantValid
			if a.Strict() {
				strictGot = wantValid
			}
		}
		check := func(mode string, want, got verdict, pass, total *int) {
			if want == unasserted {
				return
			}
			*total++
			if want == got {
				*pass++
				return
			}
			t.Errorf("%s %s mode: Parse(%q) = %v (err %v, warnings %v); want %v [%s%s%s]",
				key, mode, in, got, err, a.Warnings, want, v.Diagnosis, v.Expect, v.Validation)
		}
		check("standard", std, stdGot, &r.stdPass, &r.stdTotal)
		check("strict", strict, strictGot, &r.strictPass, &r.strictTotal)
		for _, c := range [][2]verdict{{upStd, stdGot}, {upStrict, strictGot}} {
			if c[0] != unasserted {
				r.upstreamTotal++
				if c[0] == c[1] {
					r.upstreamPass++
				}
			}
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return r
}
