package tracking

import (
	"strings"
	"testing"

	"github.com/postline/postline/internal/domain"
	"github.com/postline/postline/internal/message"
)

var testSigner = NewSigner([]byte("0123456789abcdef0123456789abcdef"))

func TestTokenRoundTrip(t *testing.T) {
	t.Parallel()
	for _, tok := range []Token{{Open, 1, 0}, {Click, 987654321, 7}, {Unsubscribe, 1 << 40, 0}} {
		text := testSigner.Encode(tok)
		got, ok := testSigner.Decode(tok.Kind, text)
		if !ok || got != tok {
			t.Errorf("Decode(Encode(%+v)) = %+v, %v", tok, got, ok)
		}
	}
}

func TestTokenRejectsForgeries(t *testing.T) {
	t.Parallel()
	good := testSigner.Encode(Token{Click, 42, 3})
	id, rest, _ := strings.Cut(good, ".")
	_, mac, _ := strings.Cut(rest, ".")
	other := NewSigner([]byte("another key, another instance...."))
	flip := []byte(mac)
	flip[0] ^= 1
	for name, text := range map[string]string{
		"other link index":      id + ".4." + mac,
		"other delivery":        "17." + rest,
		"altered mac":           id + ".3." + string(flip),
		"truncated mac":         good[:len(good)-2],
		"other key":             other.Encode(Token{Click, 42, 3}),
		"non-canonical id":      "0" + good,
		"empty":                 "",
		"no mac":                id + ".3",
		"negative link":         id + ".-1." + mac,
		"huge":                  strings.Repeat("a", 500),
		"padding on base64 mac": good + "==",
	} {
		if _, ok := testSigner.Decode(Click, text); ok {
			t.Errorf("%s: %q accepted", name, text)
		}
	}
	if _, ok := testSigner.Decode(Open, good); ok {
		t.Error("a click token was accepted as an open token")
	}
}

func TestRewriteLinks(t *testing.T) {
	t.Parallel()
	body := `<html><body><p class=x>Hi &amp; welcome</p>
<a href="https://shop.example/a?x=1&amp;y=2" class="btn">Shop</a>
<a href="mailto:help@example.com">mail</a> <a href="#top">top</a> <a href="/relative">rel</a>
<A HREF="HTTP://Example.ORG/B">upper</A>
<a href="https://skip.example/" data-postline-notrack>skip</a>
<a name="anchor">no href</a><IMG SRC="https://img.example/i.png"><DIV Class=X>kept as written</DIV>
<a href=" https://spaces.example/ ">spaces</a>
</body></html>`
	want := []string{"https://shop.example/a?x=1&y=2", "HTTP://Example.ORG/B", "https://spaces.example/"}
	links := Links(body)
	if strings.Join(links, "|") != strings.Join(want, "|") {
		t.Fatalf("Links = %q, want %q", links, want)
	}
	out := Rewrite(body, func(i int, href string) string {
		if href != want[i] {
			t.Errorf("link %d = %q, want %q", i, href, want[i])
		}
		return "https://t.example/c/" + string(rune('0'+i)) + "?a=<b>&c"
	})
	for _, s := range []string{
		`<a href="https://t.example/c/0?a=&lt;b&gt;&amp;c" class="btn">Shop</a>`,
		`<a href="https://t.example/c/1?a=&lt;b&gt;&amp;c">upper</A>`,
		`<a href="mailto:help@example.com">mail</a> <a href="#top">top</a> <a href="/relative">rel</a>`,
		`<a href="https://skip.example/" data-postline-notrack>skip</a>`,
		`<p class=x>Hi &amp; welcome</p>`, `<IMG SRC="https://img.example/i.png"><DIV Class=X>kept as written</DIV>`,
	} {
		if !strings.Contains(out, s) {
			t.Errorf("rewritten body lacks %s:\n%s", s, out)
		}
	}
	if strings.Contains(out, "shop.example") || strings.Contains(out, "spaces.example") {
		t.Errorf("a tracked URL survived:\n%s", out)
	}
	if Rewrite("no links <b>at all", nil) != "no links <b>at all" {
		t.Error("body without links changed")
	}
}

func TestAddPixel(t *testing.T) {
	t.Parallel()
	got := AddPixel("<html><BODY>x</BODY></html>", "https://t.example/o/a.gif")
	if !strings.HasPrefix(got, `<html><BODY>x<img src="https://t.example/o/a.gif"`) || !strings.HasSuffix(got, "</BODY></html>") {
		t.Errorf("pixel not before </body>: %s", got)
	}
	if got := AddPixel("<p>x</p>", "u"); !strings.HasPrefix(got, "<p>x</p><img") {
		t.Errorf("pixel not appended: %s", got)
	}
	// Characters whose lower case has another UTF-8 length, and invalid
	// bytes: the pixel still goes just before </body>, nothing is cut.
	for _, text := range []string{strings.Repeat("Ⱥ", 20), strings.Repeat("İ", 5), "bad ÿþ bytes", "K (Kelvin) ſ"} {
		body := "<html><body><p>" + text + "</p></BoDy></html>"
		got := AddPixel(body, "u")
		if want := "<html><body><p>" + text + `</p><img src="u"`; !strings.HasPrefix(got, want) || !strings.HasSuffix(got, "</BoDy></html>") {
			t.Errorf("AddPixel with %q = %q", text, got)
		}
	}
}

func TestApply(t *testing.T) {
	t.Parallel()
	u, err := NewURLs(testSigner, "https://mail.example.net:8443/", true)
	if err != nil {
		t.Fatal(err)
	}
	base := message.Params{HTML: `<a href="https://a.example/">a</a> <a href="%unsubscribe_url%">unsub</a></body>`,
		Text: "Leave: %unsubscribe_url%"}
	dom := domain.Domain{Name: "shop.example", Tracking: domain.Tracking{Opens: true, Clicks: true, Unsubscribe: true}}

	p := base
	u.Apply(&p, dom, 77)
	unsub := "https://mail.example.net:8443/t/u/" + testSigner.Encode(Token{Unsubscribe, 77, 0})
	if p.ListUnsubscribe != "<"+unsub+">" { // no authentication domain: no mailto
		t.Errorf("List-Unsubscribe = %q", p.ListUnsubscribe)
	}
	if p.Text != "Leave: "+unsub || !strings.Contains(p.HTML, `href="`+unsub+`"`) {
		t.Errorf("placeholder not replaced: %q / %q", p.Text, p.HTML)
	}
	click := "https://mail.example.net:8443/t/c/" + testSigner.Encode(Token{Click, 77, 0})
	pixel := "https://mail.example.net:8443/t/o/" + testSigner.Encode(Token{Open, 77, 0}) + ".gif"
	if !strings.Contains(p.HTML, `href="`+click+`"`) || !strings.Contains(p.HTML, `src="`+pixel+`"`) {
		t.Errorf("click or pixel missing: %s", p.HTML)
	}

	dom.TrackingDomain, dom.AuthDomain = "track.shop.example", "bounce.shop.example"
	p = base
	u.Apply(&p, dom, 77)
	if !strings.Contains(p.HTML, "https://track.shop.example:8443/t/c/") ||
		!strings.Contains(p.ListUnsubscribe, ", <mailto:unsubscribe+"+testSigner.Encode(Token{Unsubscribe, 77, 0})+"@bounce.shop.example>") {
		t.Errorf("tracking domain or mailto not used: %s / %s", p.HTML, p.ListUnsubscribe)
	}

	p = base
	u.Apply(&p, domain.Domain{Name: "shop.example"}, 77)
	if p.HTML != base.HTML || p.Text != base.Text || p.ListUnsubscribe != "" {
		t.Errorf("tracking off changed the message: %+v", p)
	}
}

func TestMailtoToken(t *testing.T) {
	t.Parallel()
	text := testSigner.Encode(Token{Unsubscribe, 5, 0})
	if tok, ok := MailtoToken(testSigner, "Unsubscribe+"+text); !ok || tok.DeliveryID != 5 {
		t.Errorf("mailto token not read: %v %v", tok, ok)
	}
	if _, ok := MailtoToken(testSigner, "unsubscribe+"+strings.ToUpper(text)); ok {
		t.Error("case-changed token accepted")
	}
	if _, ok := MailtoToken(testSigner, "bounce+"+text); ok {
		t.Error("other prefix accepted")
	}
}

func TestBotHeuristics(t *testing.T) {
	t.Parallel()
	browser := "Mozilla/5.0 (Macintosh; Intel Mac OS X 14_0) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/17.0 Safari/605.1.15"
	gmail := "Mozilla/5.0 (Windows NT 5.1; rv:11.0) Gecko Firefox/11.0 (via ggpht.com GoogleImageProxy)"
	cases := []struct {
		ua          string
		open, click string
	}{
		{browser, "", ""},
		{gmail, "", ""},
		{"", "no_user_agent", "no_user_agent"},
		{"Go-http-client/1.1", "user_agent:go-http-client", "user_agent:go-http-client"},
		{"Mozilla/5.0 (compatible; Googlebot/2.1)", "user_agent:bot", "user_agent:bot"},
		{"Barracuda Sentinel (EE)", "user_agent:barracuda", "user_agent:barracuda"},
	}
	for _, c := range cases {
		if got := classifyOpen(Client{UserAgent: c.ua}); got != c.open {
			t.Errorf("open %q = %q, want %q", c.ua, got, c.open)
		}
		if got := classifyClick(Client{UserAgent: c.ua}); got != c.click {
			t.Errorf("click %q = %q, want %q", c.ua, got, c.click)
		}
	}
	if imageProxy(gmail) != "gmail" || imageProxy(browser) != "" {
		t.Error("image proxy not recognised")
	}
}
