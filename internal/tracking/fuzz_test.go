package tracking

import (
	"slices"
	"testing"
)

// FuzzDecode: no input panics, and only Encode's own output decodes.
func FuzzDecode(f *testing.F) {
	f.Add(testSigner.Encode(Token{Click, 42, 3}))
	f.Add("1.0.AAAAAAAAAAAAAAAAAAAAAA")
	f.Fuzz(func(t *testing.T, text string) {
		if tok, ok := testSigner.Decode(Click, text); ok && testSigner.Encode(tok) != text {
			t.Fatalf("%q decoded to %+v, which encodes differently", text, tok)
		}
	})
}

// FuzzDecodeMutation: changing any byte of a valid token invalidates it.
func FuzzDecodeMutation(f *testing.F) {
	f.Add(int64(42), 3, 0, byte('x'))
	f.Add(int64(1), 0, 5, byte('A'))
	f.Fuzz(func(t *testing.T, id int64, link, pos int, b byte) {
		if id <= 0 || link < 0 || link > 1000 {
			return
		}
		text := testSigner.Encode(Token{Click, id, link})
		pos = ((pos % len(text)) + len(text)) % len(text)
		if text[pos] == b {
			return
		}
		mutated := text[:pos] + string([]byte{b}) + text[pos+1:]
		if tok, ok := testSigner.Decode(Click, mutated); ok {
			t.Fatalf("%q (from %q) decoded to %+v", mutated, text, tok)
		}
	})
}

// FuzzRewrite: rewriting every link to itself finds the same links again,
// so click indices computed at build time and at click time agree.
func FuzzRewrite(f *testing.F) {
	f.Add(`<a href="https://a.example/?x=1&amp;y=2">a</a><a href="mailto:x@y">m</a>`)
	f.Add(`<html><body><a HREF=http://b.example/ class=c>b</a><script>"<a href='https://no.example'>"</script>`)
	f.Fuzz(func(t *testing.T, body string) {
		links := Links(body)
		out := Rewrite(body, func(_ int, href string) string { return href })
		if again := Links(out); !slices.Equal(links, again) {
			t.Fatalf("links %q, after an identity rewrite %q\nbody %q\nout  %q", links, again, body, out)
		}
	})
}

// FuzzLinksOnly: a pruned send's HTML (LinksOnly) has the same links in
// the same order, so old click links still redirect where they did.
func FuzzLinksOnly(f *testing.F) {
	f.Add(`<a href="https://a.example/?x=1&amp;y=2">a</a><a href="mailto:x@y">m</a><a href=" https://q.example/&quot;x ">q</a>`)
	f.Add(`<html><body><a HREF=http://b.example/ class=c>b</a><script>"<a href='https://no.example'>"</script>`)
	f.Add(`<a href="https://n.example/" data-postline-notrack>n</a><a href="https://t.example/<>">t</a>`)
	f.Fuzz(func(t *testing.T, body string) {
		links := Links(body)
		if again := Links(LinksOnly(body)); !slices.Equal(links, again) {
			t.Fatalf("links %q, in LinksOnly %q\nbody %q", links, again, body)
		}
	})
}
