package console

import (
	"fmt"
	"html/template"
	"strconv"
	"strings"
	"time"

	"github.com/postline/postline/internal/mailgun"
	"github.com/postline/postline/internal/stats"
)

// percent is n of `of` as a percentage with the precision rates need
// (0.3% matters for complaints), or "—" when there is nothing to divide.
func percent(n, of int64) string {
	if of == 0 {
		return "—"
	}
	p := 100 * float64(n) / float64(of)
	switch {
	case p == 0 || p == 100:
		return strconv.FormatFloat(p, 'f', 0, 64) + "%"
	case p < 1:
		return strconv.FormatFloat(p, 'f', 2, 64) + "%"
	}
	return strconv.FormatFloat(p, 'f', 1, 64) + "%"
}

// outcomeSeries are the stacked parts of the analytics chart, bottom up.
var outcomeSeries = []struct {
	class, label string
	of           func(map[string]int64) int64
}{
	{"s-delivered", "delivered", func(k map[string]int64) int64 { return k[mailgun.StatDelivered] }},
	{"s-bounced", "bounced", func(k map[string]int64) int64 {
		return k[mailgun.StatPermanentBounce] + k[mailgun.StatPermanentDelayedBounce]
	}},
	{"s-failed", "failed otherwise", func(k map[string]int64) int64 {
		return k[mailgun.StatPermanentSuppressBounce] + k[mailgun.StatPermanentSuppressUnsub] + k[mailgun.StatPermanentOther]
	}},
}

// outcomeChart draws what became of the messages in each bucket as
// stacked bars, server-side SVG: a title, a y axis in messages with its
// top and middle values, an x axis with the buckets' first and last
// times (UTC), a legend, and each bar's figures on hover (<title>). Only
// numbers, times and an escaped name go into it.
func outcomeChart(name string, win analyticsWindow, starts []time.Time, series []map[string]int64) template.HTML {
	const w, h, left, bottom, top, gap = 560, 120, 44, 30, 34, 1
	peak := int64(1)
	for _, k := range series {
		var sum int64
		for _, s := range outcomeSeries {
			sum += s.of(k)
		}
		peak = max(peak, sum)
	}
	unit, layout := "hour", "Jan 2 15:04"
	if win.res == stats.Day {
		unit, layout = "day", "Jan 2"
	}
	title := fmt.Sprintf("%s: messages by outcome per %s, last %s (UTC)", name, unit, win.Label)
	var b strings.Builder
	fmt.Fprintf(&b, `<svg class="chart outcomes" viewBox="0 0 %d %d" role="img" aria-label="%s">`, w, h+top+bottom, template.HTMLEscapeString(title))
	fmt.Fprintf(&b, `<title>%s</title>`, template.HTMLEscapeString(title))
	// Legend along the top.
	x := left
	for _, s := range outcomeSeries {
		fmt.Fprintf(&b, `<rect class="%s" x="%d" y="4" width="10" height="10"></rect><text x="%d" y="13">%s</text>`, s.class, x, x+14, s.label)
		x += 14 + 7*len(s.label) + 16
	}
	// Y axis: 0, the middle and the top, in messages.
	plotW := w - left - 4
	for _, v := range []int64{0, peak / 2, peak} {
		y := top + h - int(v*h/peak)
		fmt.Fprintf(&b, `<line class="grid" x1="%d" y1="%d" x2="%d" y2="%d"></line><text x="%d" y="%d" text-anchor="end">%s</text>`,
			left, y, left+plotW, y, left-4, y+3, num(v))
	}
	fmt.Fprintf(&b, `<text x="2" y="%d" class="unit">messages</text>`, top-8)
	bw := max(1, plotW/max(1, len(series))-gap)
	for i, k := range series {
		bx, y := left+i*(bw+gap), top+h
		var parts []string
		for _, s := range outcomeSeries {
			v := s.of(k)
			parts = append(parts, num(v)+" "+s.label)
			bh := int(v * h / peak)
			if v > 0 && bh == 0 {
				bh = 1
			}
			if bh > 0 {
				y -= bh
				fmt.Fprintf(&b, `<rect class="%s" x="%d" y="%d" width="%d" height="%d"></rect>`, s.class, bx, y, bw, bh)
			}
		}
		when := starts[i].UTC().Format(layout)
		// A full-height transparent bar carries the hover figures.
		fmt.Fprintf(&b, `<rect class="hover" x="%d" y="%d" width="%d" height="%d"><title>%s: %s; %s complained</title></rect>`,
			bx, top, bw, h, when, strings.Join(parts, ", "), num(k[mailgun.StatComplained]))
	}
	fmt.Fprintf(&b, `<text x="%d" y="%d">%s</text><text x="%d" y="%d" text-anchor="end">%s</text>`,
		left, top+h+14, starts[0].UTC().Format(layout), left+plotW, top+h+14, starts[len(starts)-1].UTC().Format(layout))
	fmt.Fprintf(&b, `<text x="%d" y="%d" text-anchor="middle" class="unit">%s (UTC)</text></svg>`, left+plotW/2, top+h+27, unit)
	return template.HTML(b.String()) //nolint:gosec // integers, formatted times, fixed labels and an escaped name
}
