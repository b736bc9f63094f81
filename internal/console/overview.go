package console

import (
	"context"
	"fmt"
	"html/template"
	"net/http"
	"strings"
	"time"

	"github.com/postline/postline/internal/account"
	"github.com/postline/postline/internal/domain"
	"github.com/postline/postline/internal/event"
	"github.com/postline/postline/internal/sending"
)

// Series reads the hourly per-type counts kept beside the log (the
// charts never scan the log itself).
type Series interface {
	HourlyCounts(ctx context.Context, domainID int64, from time.Time) (map[time.Time]map[event.Type]int, error)
}

// overviewTypes are the columns of the overview, in the order of a
// message's life.
var overviewTypes = []event.Type{event.Queued, event.Delivered, event.Bounced, event.Failed, event.Opened, event.Clicked, event.Unsubscribed}

// domainOverview is one domain's block on the overview.
type domainOverview struct {
	Domain   domain.Domain
	Day      map[event.Type]int // the last 24 hours
	Month    map[event.Type]int // the last 30 days
	Chart    template.HTML      // messages per hour, last 24 hours (SVG)
	Chart30  template.HTML      // messages per day, last 30 days (SVG)
	Queue    sending.QueueCount
	Failures []event.Entry // the newest failures
}

func (c *Console) overview(w http.ResponseWriter, r *http.Request, s *account.Session) error {
	doms, err := c.deps.Domains.List(r.Context(), s.AccountID)
	if err != nil {
		return err
	}
	now := c.cfg.Now().UTC()
	var blocks []domainOverview
	for _, d := range doms {
		b := domainOverview{Domain: d, Day: map[event.Type]int{}, Month: map[event.Type]int{}}
		if c.deps.Series != nil {
			counts, err := c.deps.Series.HourlyCounts(r.Context(), d.ID, now.Add(-30*24*time.Hour))
			if err != nil {
				return err
			}
			hourly, daily := make([]int, 24), make([]int, 30)
			for h, byType := range counts {
				for t, n := range byType {
					b.Month[t] += n
					if day := int(now.Sub(h) / (24 * time.Hour)); t == event.Queued && day < 30 {
						daily[29-day] += n
					}
					if age := now.Sub(h); age < 24*time.Hour {
						b.Day[t] += n
						if t == event.Queued {
							hourly[23-int(age/time.Hour)] += n
						}
					}
				}
			}
			b.Chart = barChart(hourly, "Messages queued per hour, last 24 hours", "24 h ago")
			b.Chart30 = barChart(daily, "Messages queued per day, last 30 days", "30 days ago")
		}
		if c.deps.Queue != nil {
			if qc, err := c.deps.Queue.Counts(r.Context(), d.ID); err == nil && len(qc) == 1 {
				b.Queue = qc[0]
			}
		}
		pg, err := c.deps.Events.List(r.Context(), event.Filter{DomainID: d.ID, Type: event.Failed, Limit: 3})
		if err != nil {
			return err
		}
		b.Failures = pg.Entries
		blocks = append(blocks, b)
	}
	c.render(w, r, http.StatusOK, "overview", view{Title: "Overview", Session: s, Data: map[string]any{"Blocks": blocks, "Types": overviewTypes}})
	return nil
}

// barChart draws values as an SVG bar chart, server-side: no chart
// library, no script. Only numbers go into it.
func barChart(values []int, label, from string) template.HTML {
	const w, h, gap = 480, 80, 2
	top := 1
	for _, v := range values {
		top = max(top, v)
	}
	bw := (w - gap*len(values)) / len(values)
	var b strings.Builder
	fmt.Fprintf(&b, `<svg class="chart" viewBox="0 0 %d %d" role="img" aria-label="%s">`, w, h+14, template.HTMLEscapeString(label))
	for i, v := range values {
		bh := v * h / top
		if v > 0 && bh == 0 {
			bh = 1
		}
		fmt.Fprintf(&b, `<rect x="%d" y="%d" width="%d" height="%d"><title>%d</title></rect>`, i*(bw+gap), h-bh, bw, bh, v)
	}
	fmt.Fprintf(&b, `<text x="0" y="%d">%s</text><text x="%d" y="%d" text-anchor="end">now · max %d</text></svg>`, h+12,
		template.HTMLEscapeString(from), w, h+12, top)
	return template.HTML(b.String()) //nolint:gosec // built above from integers and an escaped label
}
