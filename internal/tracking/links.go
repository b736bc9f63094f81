package tracking

import (
	"html"
	"net/url"
	"strings"

	xhtml "golang.org/x/net/html"
)

// NoTrackAttr on a link keeps it as written (e.g. a link to a login page
// whose referrer must be clean): <a href="..." data-postline-notrack>.
const NoTrackAttr = "data-postline-notrack"

// MaxLinks is how many links per message are rewritten; later ones are
// left as written.
const MaxLinks = 500

// Links returns the trackable links of an HTML body in document order: the
// href of every <a> whose URL is absolute http or https, not marked with
// NoTrackAttr, up to MaxLinks. Link i of a click token is Links(body)[i];
// Rewrite numbers links the same way, so the index always means the URL
// that was in the message.
func Links(body string) []string {
	var out []string
	walk(body, func(_ []xhtml.Attribute, href string) string {
		out = append(out, href)
		return ""
	})
	return out
}

// LinksOnly is body reduced to its trackable links, each an empty <a>:
// Links(LinksOnly(b)) equals Links(b). A send's HTML becomes this when its
// content is pruned with the log, so that the click links of old messages
// still lead where they did.
func LinksOnly(body string) string {
	var b strings.Builder
	for _, l := range Links(body) {
		b.WriteString(`<a href="` + html.EscapeString(l) + `"></a>`)
	}
	return b.String()
}

// Rewrite returns body with the href of link i replaced by to(i, href);
// everything else is copied byte for byte.
func Rewrite(body string, to func(i int, href string) string) string {
	i := 0
	return walk(body, func(attrs []xhtml.Attribute, href string) string {
		u := to(i, href)
		i++
		var b strings.Builder
		b.WriteString("<a")
		for _, a := range attrs {
			v := a.Val
			if strings.EqualFold(a.Key, "href") {
				v = u
			}
			b.WriteString(" " + a.Key + `="` + html.EscapeString(v) + `"`)
		}
		b.WriteString(">")
		return b.String()
	})
}

// walk copies body, calling link for each trackable <a> start tag and
// writing what it returns instead of the tag.
func walk(body string, link func(attrs []xhtml.Attribute, href string) string) string {
	z := xhtml.NewTokenizer(strings.NewReader(body))
	var out strings.Builder
	out.Grow(len(body) + len(body)/4)
	n := 0
	for {
		tt := z.Next()
		if tt == xhtml.ErrorToken {
			return out.String()
		}
		raw := z.Raw()
		if tt == xhtml.StartTagToken && n < MaxLinks {
			// Only <a> tags are decoded into attributes; the rest is copied.
			if name, hasAttr := z.TagName(); hasAttr && len(name) == 1 && name[0] == 'a' {
				attrs := tagAttrs(z)
				if href, ok := trackable(attrs); ok {
					n++
					out.WriteString(link(attrs, href))
					continue
				}
			}
		}
		out.Write(raw)
	}
}

func tagAttrs(z *xhtml.Tokenizer) []xhtml.Attribute {
	var attrs []xhtml.Attribute
	for {
		k, v, more := z.TagAttr()
		attrs = append(attrs, xhtml.Attribute{Key: string(k), Val: string(v)})
		if !more {
			return attrs
		}
	}
}

func trackable(attrs []xhtml.Attribute) (string, bool) {
	href, found := "", false
	for _, a := range attrs {
		switch strings.ToLower(a.Key) {
		case NoTrackAttr:
			return "", false
		case "href":
			href, found = strings.TrimSpace(a.Val), true
		}
	}
	if !found {
		return "", false
	}
	u, err := url.Parse(href)
	if err != nil || u.Host == "" || (!strings.EqualFold(u.Scheme, "http") && !strings.EqualFold(u.Scheme, "https")) {
		return "", false // mailto:, tel:, #anchors, relative and template links stay
	}
	return href, true
}

// AddPixel returns body with the open-tracking image just before its
// closing </body>, or at the end when there is none.
func AddPixel(body, src string) string {
	img := `<img src="` + html.EscapeString(src) + `" width="1" height="1" alt="" style="display:block;width:1px;height:1px;border:0">`
	if i := lastCloseBody(body); i >= 0 {
		return body[:i] + img + body[i:]
	}
	return body + img
}

// lastCloseBody is the byte offset of the last "</body>" in any ASCII
// case, or -1. It compares bytes of body itself: lower-casing the whole
// body first would shift offsets wherever case mapping changes a
// character's UTF-8 length (Ⱥ, İ, invalid bytes).
func lastCloseBody(body string) int {
	const tag = "</body>"
	for i := len(body) - len(tag); i >= 0; i-- {
		if body[i] == '<' && strings.EqualFold(body[i:i+len(tag)], tag) {
			return i
		}
	}
	return -1
}
