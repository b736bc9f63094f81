package replystrip

import (
	"strings"
	"testing"
	"time"
)

func TestText(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name, in, text, sig string
	}{
		{"plain", "Thanks, that works.\n", "Thanks, that works.", ""},
		{"gmail attribution",
			"Sounds good.\r\n\r\nOn Mon, Nov 23, 2026 at 10:00 AM Ann <ann@example.org> wrote:\r\n> Shall we meet?\r\n",
			"Sounds good.", ""},
		{"attribution wrapped over two lines",
			"Yes.\n\nOn Mon, Nov 23, 2026 at 10:00 AM Ann Example <\nann@example.org> wrote:\n> Shall we?\n",
			"Yes.", ""},
		{"attribution in German", "Ja.\n\nAm 23.11.2026 um 10:00 schrieb Ann:\n> Wann?\n", "Ja.", ""},
		{"original message marker",
			"See below.\n\n-----Original Message-----\nFrom: Ann\nSent: Monday\nTo: Bob\nSubject: Hi\n\nHello\n",
			"See below.", ""},
		{"outlook header block",
			"Done.\n\n________________________________\nFrom: Ann Example <ann@example.org>\nSent: Monday, November 23, 2026 10:00\nTo: Bob <bob@example.org>\nSubject: Re: task\n\nIs it done?\n",
			"Done.", ""},
		{"outlook block without the rule",
			"Done.\n\nFrom: Ann Example <ann@example.org>\nDate: Monday, November 23, 2026 10:00\nSubject: Re: task\n\nIs it done?\n",
			"Done.", ""},
		{"a From: line that is not a header block stays",
			"From: the team, with thanks.\nSee you.\n", "From: the team, with thanks.\nSee you.", ""},
		{"quoted to the end", "Agreed\n\n> earlier\n> text\n", "Agreed", ""},
		{"interleaved quotes stay",
			"> question one\nanswer one\n> question two\nanswer two\n",
			"> question one\nanswer one\n> question two\nanswer two", ""},
		{"signature", "See you at 5.\n\n-- \nBob Example\nACME\n", "See you at 5.", "Bob Example\nACME"},
		{"signature then quote",
			"Fine.\n-- \nBob\n\nOn Tue, Nov 24, 2026, Ann wrote:\n> ok?\n", "Fine.", "Bob"},
		{"double dash without the space", "Hi\n--\nBob\n", "Hi", "Bob"},
		{"only a quote", "> all quoted\n", "", ""},
		{"empty", "", "", ""},
	}
	for _, c := range cases {
		got := Text(c.in)
		if got.Text != c.text || got.Signature != c.sig {
			t.Errorf("%s: Text(%q) = %q, signature %q; want %q, %q", c.name, c.in, got.Text, got.Signature, c.text, c.sig)
		}
	}
}

func TestHTML(t *testing.T) {
	t.Parallel()
	cases := []struct{ name, in, want string }{
		{"gmail", `<div dir="ltr">Yes!</div><br><div class="gmail_quote"><div class="gmail_attr">On Mon, Ann wrote:</div><blockquote>q</blockquote></div>`,
			`<div dir="ltr">Yes!</div><br>`},
		{"blockquote", `<p>Fine</p><blockquote type="cite">old</blockquote>`, `<p>Fine</p>`},
		{"outlook", `<div>Done</div><div id="divRplyFwdMsg" dir="ltr"><b>From:</b> Ann</div>`, `<div>Done</div>`},
		{"thunderbird", `<p>ok</p><div class="moz-cite-prefix">On 11/23/26 Ann wrote:<br></div><blockquote>x</blockquote>`, `<p>ok</p>`},
		{"original message marker", `<p>see</p><p>-----Original Message-----</p>`, `<p>see</p><p>`},
		{"no quote", `<p>just this</p>`, `<p>just this</p>`},
	}
	for _, c := range cases {
		if got := HTML(c.in); got != c.want {
			t.Errorf("%s: HTML(%q) = %q; want %q", c.name, c.in, got, c.want)
		}
	}
}

func FuzzText(f *testing.F) {
	for _, s := range []string{"hi\n\nOn Mon Ann wrote:\n> x", "a\n-- \nsig", "-----Original Message-----", "> q\nA\n", "From: a\nSent: b\nTo: c\n",
		"\r\n\r\n--\r\n", "On\nwrote:"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		got := Text(s)
		norm := strings.ReplaceAll(strings.ReplaceAll(s, "\r\n", "\n"), "\r", "\n")
		if !strings.Contains(norm, got.Text) || !strings.Contains(norm, got.Signature) {
			t.Fatalf("Text(%q) = %+v: not parts of the input", s, got)
		}
		if got.Text != "" && got.Signature != "" && strings.Index(norm, got.Text) > strings.LastIndex(norm, got.Signature) {
			t.Fatalf("Text(%q) = %+v: the text comes after the signature", s, got)
		}
		if h := HTML(s); !strings.Contains(s, h) {
			t.Fatalf("HTML(%q) = %q: not part of the input", s, h)
		}
	})
}

// TestTextLinear: many ">" lines above new text (an interleaved reply
// without end, 500,000 lines in MaxInput) are read in one pass: each
// used to look ahead to the end of the text, so 160,000 of them took
// minutes of a post's try.
func TestTextLinear(t *testing.T) {
	t.Parallel()
	in := strings.Repeat(">\n", MaxInput/2-1) + "x\n"
	start := time.Now()
	got := Text(in)
	if took := time.Since(start); took > 5*time.Second {
		t.Errorf("Text of %d quote lines then new text took %v", MaxInput/2-1, took)
	}
	if !strings.HasSuffix(got.Text, ">\nx") {
		t.Errorf("an interleaved reply is kept whole; got ...%q", got.Text[max(0, len(got.Text)-10):])
	}
}
