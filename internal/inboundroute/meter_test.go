package inboundroute

import (
	"fmt"
	"net/textproto"
	"strings"
	"testing"
	"time"
)

// TestMatchWorkBounded runs the pathological routes: patterns at the
// per-pattern bounds (3,000 instructions, 99 captures) against a
// message with 100 values of 16 KiB of one header, in 1,000 routes. Without
// a bound on the whole evaluation that is hours of CPU per recipient;
// with it the evaluation stops at MaxMatchCost (about a second), says so
// (Spent), and takes nothing.
func TestMatchWorkBounded(t *testing.T) {
	t.Parallel()
	pat := `(?s)` + strings.Repeat("(.*)", 99) + strings.Repeat("(?:.*)", 400) + `Q`
	h := textproto.MIMEHeader{}
	for range MaxHeaderValues {
		h.Add("Subject", strings.Repeat("abcdefghij", MaxHeaderValueBytes/10))
	}
	var routes []*Route
	for i := range MaxPerAccount {
		r, err := Definition{ID: fmt.Sprintf("%024x", i), Expression: `match_header("Subject", "` + pat + `")`, Actions: []string{"store()"}}.Compile()
		if err != nil {
			t.Fatal(err)
		}
		routes = append(routes, r)
	}
	start := time.Now()
	var m Meter
	got := EvaluateWithin(routes, "a@x.example", h, &m)
	took := time.Since(start)
	if !m.Spent() || len(got) != 0 {
		t.Errorf("1,000 routes of a %d-byte pattern against 100 values of 16 KiB: spent %v, %d actions; want the meter spent and none", len(pat), m.Spent(), len(got))
	}
	if took > 30*time.Second {
		t.Errorf("the bounded evaluation took %v", took)
	}
	// At RCPT: the recipient alone, up to 1,000 bytes.
	var rm Meter
	rcpt := strings.Repeat("a", MaxRecipientBytes-20) + "@x.example"
	heavy, err := Compile(`match_recipient("`+pat+`")`, []string{"store()"})
	if err != nil {
		t.Fatal(err)
	}
	for range MaxPerAccount {
		if ok, _ := heavy.MatchRecipientWithin(rcpt, &rm); ok || rm.Spent() {
			break
		}
	}
	if !rm.Spent() {
		t.Errorf("1,000 heavy recipient patterns against a %d-byte recipient did not spend the meter", len(rcpt))
	}
	// Ordinary routes are far from the bound: 1,000 of them, each with
	// a header filter, against an ordinary message.
	var light []*Route
	for i := range MaxPerAccount {
		r, err := Compile(fmt.Sprintf(`match_recipient("^support-(\d+)@shop\.example$") and match_header("Subject", "(.*)order %d")`, i), []string{"store()"})
		if err != nil {
			t.Fatal(err)
		}
		light = append(light, r)
	}
	var lm Meter
	hdr := textproto.MIMEHeader{"Subject": {"Where is my order 999? " + strings.Repeat("It has not arrived. ", 10)}}
	if got := EvaluateWithin(light, "support-42@shop.example", hdr, &lm); lm.Spent() || len(got) == 0 {
		t.Errorf("1,000 ordinary routes: spent %v (%d of %d), %d actions; want the last route's store", lm.Spent(), lm.spent, MaxMatchCost, len(got))
	}
}

// TestCapturesBounded: an expression may have at most MaxCaptures
// captures (the actions refer to \1 .. \99), across its filters.
func TestCapturesBounded(t *testing.T) {
	t.Parallel()
	if _, err := Compile(`match_recipient("`+strings.Repeat("(a)", MaxCaptures)+`")`, []string{`forward("https://a.example/\99")`}); err != nil {
		t.Errorf("%d captures: %v", MaxCaptures, err)
	}
	_, err := Compile(`match_recipient("`+strings.Repeat("(a)", 60)+`") and match_header("Subject", "`+strings.Repeat("(b)", 40)+`")`, []string{"store()"})
	if err == nil || !strings.Contains(err.Error(), "100 captures, more than 99") {
		t.Errorf("100 captures over two filters: %v; want refused, naming the bound", err)
	}
	if _, err := Compile(`match_recipient("`+strings.Repeat("(?:a)", 600)+`")`, []string{"store()"}); err != nil {
		t.Errorf("600 non-capturing groups: %v", err)
	}
}
