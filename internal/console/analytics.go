package console

import (
	"context"
	"net/http"
	"strings"
	"time"

	"github.com/postline/postline/internal/account"
	"github.com/postline/postline/internal/domain"
	"github.com/postline/postline/internal/mailgun"
	"github.com/postline/postline/internal/stats"
)

// Stats reads the hourly counts by Mailgun stat key, per domain and per
// tag, that the event store keeps as it records (*stats.Service).
type Stats interface {
	Totals(ctx context.Context, domainIDs []int64, tag string, r stats.Resolution, starts []time.Time) ([]map[string]int64, error)
	Tags(ctx context.Context, domainID int64, p stats.TagPage) ([]stats.Tag, error)
}

// maxTagRows bounds the page's table by tag (a query each): the tags of
// the domain used in the period, in name order.
const maxTagRows = 20

// analyticsWindow is one of the periods the analytics page shows.
type analyticsWindow struct {
	Name    string // as in the query: 24h, 7d, 30d
	Label   string
	res     stats.Resolution
	buckets int
}

var analyticsWindows = []analyticsWindow{
	{"24h", "24 hours", stats.Hour, 24},
	{"7d", "7 days", stats.Day, 7},
	{"30d", "30 days", stats.Day, 30},
}

// The thresholds the page warns at. Gmail and Yahoo enforce a spam
// complaint rate below 0.3% for bulk senders and ask for below 0.1%
// (Gmail's sender guidelines, Yahoo's sender best practices). Neither
// publishes a bounce rate; 2% and 5% are the usual list-hygiene marks
// and are Postline's choice.
const (
	complaintNear, complaintOver = 0.001, 0.003
	bounceNear, bounceOver       = 0.02, 0.05
)

// maxTagFilter bounds the tag typed in the filter (tags are at most 255).
const maxTagFilter = 255

// analyticsRow is one domain's (or the account's) figures over the window.
type analyticsRow struct {
	Name                                                              string
	Accepted, Delivered, Bounced, Failed, Complained, Opened, Clicked int64
	Unsubscribed                                                      int64
	Series                                                            []map[string]int64
}

func (a analyticsRow) DeliveredRate() string   { return percent(a.Delivered, a.Accepted) }
func (a analyticsRow) BounceRate() string      { return percent(a.Bounced, a.Delivered+a.Bounced) }
func (a analyticsRow) ComplaintRate() string   { return percent(a.Complained, a.Delivered) }
func (a analyticsRow) OpenRate() string        { return percent(a.Opened, a.Delivered) }
func (a analyticsRow) ClickRate() string       { return percent(a.Clicked, a.Delivered) }
func (a analyticsRow) Empty() bool             { return a.Accepted == 0 && a.Delivered == 0 && a.Bounced == 0 }
func (a analyticsRow) complaintShare() float64 { return share(a.Complained, a.Delivered) }
func (a analyticsRow) bounceShare() float64    { return share(a.Bounced, a.Delivered+a.Bounced) }

// add counts one bucket's keys into a.
func (a *analyticsRow) add(k map[string]int64) {
	a.Accepted += k[mailgun.StatAccepted]
	a.Delivered += k[mailgun.StatDelivered]
	a.Bounced += k[mailgun.StatPermanentBounce] + k[mailgun.StatPermanentDelayedBounce]
	a.Failed += k[mailgun.StatPermanentSuppressBounce] + k[mailgun.StatPermanentSuppressUnsub] + k[mailgun.StatPermanentOther]
	a.Complained += k[mailgun.StatComplained]
	a.Opened += k[mailgun.StatOpenedUnique]
	a.Clicked += k[mailgun.StatClickedUnique]
	a.Unsubscribed += k[mailgun.StatUnsubscribed]
}

// analytics shows, per domain and for the account, delivered, bounce,
// complaint, open and click rates over 24 hours, 7 days or 30 days, for
// all mail or one tag, from the hourly counts (never a scan of the log),
// with a chart of each and warnings near the complaint and bounce rates
// mailbox providers act on.
func (c *Console) analytics(w http.ResponseWriter, r *http.Request, s *account.Session) error {
	q := r.URL.Query()
	win := analyticsWindows[0]
	for _, aw := range analyticsWindows {
		if aw.Name == q.Get("window") {
			win = aw
		}
	}
	tag := strings.TrimSpace(q.Get("tag"))
	if len(tag) > maxTagFilter {
		c.render(w, r, http.StatusUnprocessableEntity, "analytics", view{Title: "Analytics", Session: s, Data: map[string]any{
			"Windows": analyticsWindows, "Window": win, "Problems": []string{"Tag: at most 255 characters."}}})
		return nil
	}
	var doms []domain.Domain
	if name := q.Get("domain"); name != "" {
		d, err := c.deps.Domains.Owned(r.Context(), s.AccountID, name)
		if err != nil {
			return err
		}
		doms = []domain.Domain{d}
	} else {
		all, err := c.deps.Domains.List(r.Context(), s.AccountID)
		if err != nil {
			return err
		}
		doms = all
	}
	now := c.cfg.Now().UTC()
	last := win.res.Floor(now)
	first := last
	for range win.buckets - 1 {
		first = prevBucket(win.res, first)
	}
	starts, _ := stats.Buckets(first, now, win.res, stats.MaxBuckets)
	account := analyticsRow{Name: "All domains", Series: emptySeries(len(starts))}
	rows := make([]analyticsRow, 0, len(doms))
	for _, d := range doms {
		row := analyticsRow{Name: d.Name}
		if c.deps.Stats != nil {
			series, err := c.deps.Stats.Totals(r.Context(), []int64{d.ID}, tag, win.res, starts)
			if err != nil {
				return err
			}
			row.Series = series
			for i, k := range series {
				row.add(k)
				for key, n := range k {
					account.Series[i][key] += n
				}
			}
		}
		rows = append(rows, row)
	}
	for _, k := range account.Series {
		account.add(k)
	}
	charts := make([]chartView, 0, len(rows)+1)
	for _, row := range append([]analyticsRow{account}, rows...) {
		if row.Series == nil || row.Empty() {
			continue
		}
		charts = append(charts, chartView{Name: row.Name, SVG: outcomeChart(row.Name, win, starts, row.Series)})
	}
	var byTag []analyticsRow
	if q.Get("domain") != "" && tag == "" && c.deps.Stats != nil {
		var err error
		if byTag, err = c.tagRows(r.Context(), doms[0].ID, win, starts); err != nil {
			return err
		}
	}
	c.render(w, r, http.StatusOK, "analytics", view{Title: "Analytics", Session: s, Data: map[string]any{
		"Windows": analyticsWindows, "Window": win, "Tag": tag, "Domain": q.Get("domain"), "Domains": doms,
		"Account": account, "Rows": rows, "Charts": charts, "Warnings": warnings(account), "ByTag": byTag}})
	return nil
}

// tagRows are the figures of the domain's tags used in the period (the
// first maxTagRows in name order).
func (c *Console) tagRows(ctx context.Context, domainID int64, win analyticsWindow, starts []time.Time) ([]analyticsRow, error) {
	tags, err := c.deps.Stats.Tags(ctx, domainID, stats.TagPage{Limit: 1000})
	if err != nil {
		return nil, err
	}
	var rows []analyticsRow
	for _, t := range tags {
		if t.LastSeen.Before(starts[0]) {
			continue
		}
		series, err := c.deps.Stats.Totals(ctx, []int64{domainID}, t.Name, win.res, starts)
		if err != nil {
			return nil, err
		}
		row := analyticsRow{Name: t.Name}
		for _, k := range series {
			row.add(k)
		}
		if rows = append(rows, row); len(rows) == maxTagRows {
			break
		}
	}
	return rows, nil
}

type chartView struct {
	Name string
	SVG  any
}

// warnings are what the account's rates come near or past.
func warnings(a analyticsRow) []string {
	var out []string
	switch c := a.complaintShare(); {
	case c >= complaintOver:
		out = append(out, "Complaint rate "+a.ComplaintRate()+": at or over the 0.3% Gmail and Yahoo enforce; their users' mail from you may be refused or go to spam.")
	case c >= complaintNear:
		out = append(out, "Complaint rate "+a.ComplaintRate()+": over the 0.1% Gmail asks senders to stay under (0.3% is enforced).")
	}
	switch b := a.bounceShare(); {
	case b >= bounceOver:
		out = append(out, "Bounce rate "+a.BounceRate()+": over 5%; clean the lists these messages go to (Validation) before sending more.")
	case b >= bounceNear:
		out = append(out, "Bounce rate "+a.BounceRate()+": over 2%; check the lists these messages go to.")
	}
	return out
}

func emptySeries(n int) []map[string]int64 {
	s := make([]map[string]int64, n)
	for i := range s {
		s[i] = map[string]int64{}
	}
	return s
}

// prevBucket is the start of the bucket before the one starting at t.
func prevBucket(r stats.Resolution, t time.Time) time.Time {
	if r == stats.Day {
		return t.AddDate(0, 0, -1)
	}
	return t.Add(-time.Hour)
}

func share(n, of int64) float64 {
	if of == 0 {
		return 0
	}
	return float64(n) / float64(of)
}
