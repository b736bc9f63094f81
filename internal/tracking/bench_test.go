package tracking

import (
	"fmt"
	"strings"
	"testing"

	"github.com/postline/postline/internal/domain"
	"github.com/postline/postline/internal/message"
)

// newsletter is a 30-link, ~20 KB HTML body, a typical marketing message.
func newsletter() string {
	var b strings.Builder
	b.WriteString(`<html><head><style>p{margin:0}</style></head><body><table>`)
	for i := range 30 {
		fmt.Fprintf(&b, `<tr><td><p class="item">Item %d: %s</p><a href="https://shop.example/p/%d?utm_source=mail&amp;utm_medium=email" style="color:#06c">See item %d</a></td></tr>`,
			i, strings.Repeat("lorem ipsum dolor sit amet ", 20), i, i)
	}
	b.WriteString(`</table></body></html>`)
	return b.String()
}

// BenchmarkApply is the build-time cost of tracking one message: 30 links
// rewritten, the pixel and List-Unsubscribe added.
func BenchmarkApply(b *testing.B) {
	u, _ := NewURLs(testSigner, "https://mail.example.net", false)
	dom := domain.Domain{Tracking: domain.Tracking{Opens: true, Clicks: true, Unsubscribe: true}}
	body := newsletter()
	b.SetBytes(int64(len(body)))
	b.ReportAllocs()
	for i := 0; b.Loop(); i++ {
		p := message.Params{HTML: body, Text: "t"}
		u.Apply(&p, dom, int64(i+1))
	}
}

func BenchmarkDecode(b *testing.B) {
	text := testSigner.Encode(Token{Click, 123456789, 7})
	b.ReportAllocs()
	for b.Loop() {
		if _, ok := testSigner.Decode(Click, text); !ok {
			b.Fatal("not decoded")
		}
	}
}
