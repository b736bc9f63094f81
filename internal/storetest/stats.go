package storetest

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/postline/postline/internal/apperr"
	"github.com/postline/postline/internal/event"
	"github.com/postline/postline/internal/mailgun"
	"github.com/postline/postline/internal/secret"
	"github.com/postline/postline/internal/stats"
	"github.com/postline/postline/internal/store"
)

// statEntry is an entry for the stats tests: type, details, tags, time.
func statEntry(dom int64, typ event.Type, details, tags string, at time.Time) event.Entry {
	return event.Entry{DomainID: dom, MessageID: "<m@alice.example>", Type: typ, Recipient: "r@example.net", Tags: tags,
		CreatedAt: at, Details: []byte(details)}
}

// testStatCounts: recording entries counts them per hour by Mailgun's stat
// key, for the domain and for each of their tags, in the same
// transaction; entries Mailgun has no event for (or that repeat one) are
// not counted; hours, days and several domains sum as asked.
func testStatCounts(t *testing.T, db *store.DB) {
	ctx := context.Background()
	_, d := NewDomainRow(t, db, "alice", "alice.example")
	_, other := NewDomainRow(t, db, "bob", "bob.example")
	ev, st := store.NewEvents(db), store.NewStats(db)
	h0 := now.Truncate(time.Hour)
	at := func(m time.Duration) time.Time { return h0.Add(m) }
	entries := []event.Entry{
		statEntry(d.ID, event.Queued, `{}`, "News, Weekly", at(time.Minute)),
		statEntry(d.ID, event.Queued, `{}`, "news", at(2*time.Minute)),
		statEntry(d.ID, event.Queued, `{}`, "", at(3*time.Minute)),
		statEntry(d.ID, event.Send, `{}`, "news", at(4*time.Minute)),
		statEntry(d.ID, event.Delivered, `{}`, "news", at(5*time.Minute)),
		statEntry(d.ID, event.TemporaryFail, `{}`, "news", at(6*time.Minute)),
		statEntry(d.ID, event.Deferred, `{}`, "news", at(6*time.Minute)),
		// A 5xx: permanent_fail and the worker's bounced after it count once.
		statEntry(d.ID, event.PermanentFail, `{"stage":"rcpt"}`, "news", at(7*time.Minute)),
		statEntry(d.ID, event.Bounced, `{"stage":"rcpt"}`, "news", at(7*time.Minute)),
		statEntry(d.ID, event.PermanentFail, `{"stage":"data"}`, "", at(8*time.Minute)),
		statEntry(d.ID, event.Failed, `{"reason":"permanent_failure"}`, "", at(8*time.Minute)),
		statEntry(d.ID, event.Failed, `{"reason":"suppressed","suppression":"bounce"}`, "", at(9*time.Minute)),
		statEntry(d.ID, event.Failed, `{"reason":"suppressed","suppression":"unsubscribe"}`, "", at(9*time.Minute)),
		statEntry(d.ID, event.Failed, `{"reason":"max_age_exceeded"}`, "", at(9*time.Minute)),
		statEntry(d.ID, event.Opened, `{"first":true}`, "news", at(10*time.Minute)),
		statEntry(d.ID, event.Opened, `{"first":false}`, "news", at(11*time.Minute)),
		statEntry(d.ID, event.Clicked, `{"first":true}`, "", at(12*time.Minute)),
		statEntry(d.ID, event.Unsubscribed, `{"source":"link"}`, "", at(13*time.Minute)),
		statEntry(d.ID, event.Unsubscribed, `{"source":"complaint"}`, "", at(14*time.Minute)),
		// Next hour: a DSN bounce.
		statEntry(d.ID, event.Bounced, `{"source":"dsn"}`, "news", at(70*time.Minute)),
		// Another domain, and a tag longer than Mailgun's 128 characters.
		statEntry(other.ID, event.Delivered, `{}`, "news,"+strings.Repeat("x", 129), at(5*time.Minute)),
	}
	if err := ev.Insert(ctx, entries); err != nil {
		t.Fatal(err)
	}
	counts := func(ids []int64, tag string, daily bool) map[time.Time]map[string]int64 {
		t.Helper()
		got, err := st.Counts(ctx, ids, tag, h0.Add(-time.Hour), h0.Add(3*time.Hour), daily)
		if err != nil {
			t.Fatalf("Counts(%v, %q): %v", ids, tag, err)
		}
		return got
	}
	want := map[time.Time]map[string]int64{
		h0: {mailgun.StatAccepted: 3, mailgun.StatDelivered: 1, mailgun.StatTemporaryESPBlock: 1, mailgun.StatPermanentBounce: 2,
			mailgun.StatPermanentSuppressBounce: 1, mailgun.StatPermanentSuppressUnsub: 1, mailgun.StatPermanentOther: 1,
			mailgun.StatOpenedUnique: 1, mailgun.StatOpenedRepeat: 1, mailgun.StatClickedUnique: 1,
			mailgun.StatUnsubscribed: 1, mailgun.StatComplained: 1},
		h0.Add(time.Hour): {mailgun.StatPermanentDelayedBounce: 1},
	}
	if got := counts([]int64{d.ID}, "", false); !equalCounts(got, want) {
		t.Errorf("the domain's hourly counts = %v; want %v", got, want)
	}
	day := h0.Truncate(24 * time.Hour)
	wantDay := map[time.Time]map[string]int64{day: maps.Clone(want[h0])}
	wantDay[day][mailgun.StatPermanentDelayedBounce] = 1
	if got := counts([]int64{d.ID}, "", true); !equalCounts(got, wantDay) {
		t.Errorf("the domain's daily counts = %v; want %v", got, wantDay)
	}
	wantNews := map[time.Time]map[string]int64{
		h0: {mailgun.StatAccepted: 2, mailgun.StatDelivered: 1, mailgun.StatTemporaryESPBlock: 1, mailgun.StatPermanentBounce: 1,
			mailgun.StatOpenedUnique: 1, mailgun.StatOpenedRepeat: 1},
		h0.Add(time.Hour): {mailgun.StatPermanentDelayedBounce: 1},
	}
	if got := counts([]int64{d.ID}, "news", false); !equalCounts(got, wantNews) {
		t.Errorf("tag news (any case) = %v; want %v", got, wantNews)
	}
	if got := counts([]int64{d.ID}, "weekly", false); !equalCounts(got, map[time.Time]map[string]int64{h0: {mailgun.StatAccepted: 1}}) {
		t.Errorf("tag weekly = %v", got)
	}
	if got := counts([]int64{d.ID, other.ID}, "", false); got[h0][mailgun.StatDelivered] != 2 || got[h0][mailgun.StatAccepted] != 3 {
		t.Errorf("both domains = %v; want 2 delivered, 3 accepted", got)
	}
	if got := counts([]int64{other.ID}, strings.Repeat("x", 129), false); len(got) != 0 {
		t.Errorf("a tag over 128 characters was counted: %v", got)
	}
	if got, err := st.Counts(ctx, []int64{d.ID}, "", h0.Add(time.Hour), h0.Add(2*time.Hour), false); err != nil || !equalCounts(got,
		map[time.Time]map[string]int64{h0.Add(time.Hour): {mailgun.StatPermanentDelayedBounce: 1}}) {
		t.Errorf("Counts of [h0+1h, h0+2h) = %v, %v", got, err)
	}
	// A transaction that fails leaves no counts behind.
	err := db.InTx(ctx, func(q store.Querier) error {
		if err := ev.In(q).Insert(ctx, []event.Entry{statEntry(d.ID, event.Delivered, `{}`, "rolled", at(15*time.Minute))}); err != nil {
			return err
		}
		return fmt.Errorf("boom")
	})
	if err == nil || counts([]int64{d.ID}, "", false)[h0][mailgun.StatDelivered] != 1 {
		t.Errorf("a rolled-back insert changed the counts: %v", err)
	}
	if _, err := st.Tag(ctx, d.ID, "rolled"); apperr.CodeOf(err) != apperr.NotFound {
		t.Errorf("a rolled-back insert's tag: %v", err)
	}
}

func equalCounts(a, b map[time.Time]map[string]int64) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if !maps.Equal(v, b[k]) {
			return false
		}
	}
	return true
}

// testTags: tags are tracked with their first and last use, paged by
// name, described, deleted with their counts, bounded per domain, and
// retention forgets the old ones with the old counts.
func testTags(t *testing.T, db *store.DB) {
	ctx := context.Background()
	_, d := NewDomainRow(t, db, "alice", "alice.example")
	_, other := NewDomainRow(t, db, "bob", "bob.example")
	ev, st := store.NewEvents(db), store.NewStats(db)
	h0 := now.Truncate(time.Hour)
	insert := func(entries ...event.Entry) {
		t.Helper()
		if err := ev.Insert(ctx, entries); err != nil {
			t.Fatal(err)
		}
	}
	insert(statEntry(d.ID, event.Queued, `{}`, "news,weekly", h0.Add(time.Minute)),
		statEntry(d.ID, event.Delivered, `{}`, "news", h0.Add(2*time.Minute)),
		statEntry(d.ID, event.Send, `{}`, "sendonly", h0.Add(2*time.Minute)), // no Mailgun event: no tag
		statEntry(other.ID, event.Queued, `{}`, "bobs", h0))
	tag := func(dom int64, name string) stats.Tag {
		t.Helper()
		g, err := st.Tag(ctx, dom, name)
		if err != nil {
			t.Fatalf("Tag(%s): %v", name, err)
		}
		return g
	}
	if g := tag(d.ID, "news"); !g.FirstSeen.Equal(h0.Add(time.Minute)) || !g.LastSeen.Equal(h0.Add(2*time.Minute)) || g.Description != "" {
		t.Errorf("news = %+v; first seen +1m, last seen +2m", g)
	}
	if _, err := st.Tag(ctx, d.ID, "sendonly"); apperr.CodeOf(err) != apperr.NotFound {
		t.Errorf("a tag only a send entry had: %v", err)
	}
	if _, err := st.Tag(ctx, d.ID, "bobs"); apperr.CodeOf(err) != apperr.NotFound {
		t.Errorf("bob's tag on alice's domain: %v", err)
	}
	// last_seen moves once a use is a minute newer, not for every use.
	insert(statEntry(d.ID, event.Delivered, `{}`, "news", h0.Add(2*time.Minute+30*time.Second)))
	if g := tag(d.ID, "news"); !g.LastSeen.Equal(h0.Add(2 * time.Minute)) {
		t.Errorf("last seen after a use 30 s later = %v; want unchanged", g.LastSeen)
	}
	insert(statEntry(d.ID, event.Delivered, `{}`, "news", h0.Add(40*time.Minute)))
	if g := tag(d.ID, "news"); !g.LastSeen.Equal(h0.Add(40 * time.Minute)) {
		t.Errorf("last seen after a use 38 min later = %v", g.LastSeen)
	}
	names := func(p stats.TagPage) string {
		t.Helper()
		list, err := st.ListTags(ctx, d.ID, p)
		if err != nil {
			t.Fatal(err)
		}
		var out []string
		for _, g := range list {
			out = append(out, g.Name)
		}
		return strings.Join(out, " ")
	}
	insert(statEntry(d.ID, event.Queued, `{}`, "alpha,beta,zulu", h0.Add(3*time.Minute)))
	for _, c := range []struct {
		p    stats.TagPage
		want string
	}{
		{stats.TagPage{Limit: 2}, "alpha beta"},
		{stats.TagPage{Dir: stats.Next, Pivot: "beta", Limit: 2}, "news weekly"},
		{stats.TagPage{Dir: stats.Next, Pivot: "weekly", Limit: 2}, "zulu"},
		{stats.TagPage{Dir: stats.Next, Pivot: "zulu", Limit: 2}, ""},
		{stats.TagPage{Dir: stats.Prev, Pivot: "news", Limit: 2}, "alpha beta"},
		{stats.TagPage{Dir: stats.Prev, Pivot: "beta", Limit: 2}, "alpha"},
		{stats.TagPage{Dir: stats.Last, Limit: 2}, "weekly zulu"},
		{stats.TagPage{Prefix: "we", Limit: 10}, "weekly"},
		{stats.TagPage{Dir: stats.Next, Pivot: "alpha", Prefix: "be", Limit: 10}, "beta"},
	} {
		if got := names(c.p); got != c.want {
			t.Errorf("ListTags(%+v) = %q; want %q", c.p, got, c.want)
		}
	}
	if err := st.DescribeTag(ctx, d.ID, "news", "The newsletter"); err != nil {
		t.Fatal(err)
	}
	if g := tag(d.ID, "news"); g.Description != "The newsletter" {
		t.Errorf("description = %q", g.Description)
	}
	if err := st.DescribeTag(ctx, other.ID, "news", "x"); apperr.CodeOf(err) != apperr.NotFound {
		t.Errorf("DescribeTag of a tag bob's domain lacks: %v", err)
	}
	// Delete: the tag and its counts; the domain's counts stay.
	if err := st.DeleteTag(ctx, d.ID, "news"); err != nil {
		t.Fatal(err)
	}
	if err := st.DeleteTag(ctx, d.ID, "news"); apperr.CodeOf(err) != apperr.NotFound {
		t.Errorf("second DeleteTag: %v", err)
	}
	span := func(dom int64, tag string) map[time.Time]map[string]int64 {
		t.Helper()
		got, err := st.Counts(ctx, []int64{dom}, tag, h0.Add(-24*time.Hour), h0.Add(24*time.Hour), false)
		if err != nil {
			t.Fatal(err)
		}
		return got
	}
	if got := span(d.ID, "news"); len(got) != 0 {
		t.Errorf("a deleted tag's counts: %v", got)
	}
	if got := span(d.ID, ""); got[h0][mailgun.StatDelivered] != 3 {
		t.Errorf("the domain's counts after deleting a tag = %v; want 3 delivered", got)
	}
	// Used again, it is tracked anew.
	insert(statEntry(d.ID, event.Delivered, `{}`, "news", h0.Add(50*time.Minute)))
	if g := tag(d.ID, "news"); !g.FirstSeen.Equal(h0.Add(50*time.Minute)) || g.Description != "" {
		t.Errorf("news used again = %+v", g)
	}
	if got := span(d.ID, "news"); got[h0][mailgun.StatDelivered] != 1 {
		t.Errorf("news's counts after its return = %v", got)
	}

	// The bound: new tags beyond stats.MaxTagsPerDomain are not tracked;
	// the domain's counts still have their messages.
	var many []string
	for i := range stats.MaxTagsPerDomain {
		many = append(many, fmt.Sprintf("t%04d", i))
	}
	var batch []event.Entry // one transaction, an entry per stats.MaxTagsPerEntry tags
	for part := range slices.Chunk(many, stats.MaxTagsPerEntry) {
		batch = append(batch, statEntry(d.ID, event.Queued, `{}`, strings.Join(part, ","), h0.Add(55*time.Minute)))
	}
	insert(batch...)
	list, err := st.ListTags(ctx, d.ID, stats.TagPage{Dir: stats.Last, Limit: 1000})
	if err != nil {
		t.Fatal(err)
	}
	var n int
	db.Reader().QueryRowContext(ctx, `SELECT count(*) FROM tags WHERE domain_id = $1`, d.ID).Scan(&n)
	if n != stats.MaxTagsPerDomain || list[len(list)-1].Name != "zulu" {
		t.Errorf("%d tags after %d new ones; want the bound %d", n, len(many), stats.MaxTagsPerDomain)
	}
	tracked := stats.MaxTagsPerDomain - 5 // alpha beta news weekly zulu came first
	if got := span(d.ID, many[tracked-1]); got[h0][mailgun.StatAccepted] != 1 {
		t.Errorf("the last tag within the bound: %v", got)
	}
	if _, err := st.Tag(ctx, d.ID, many[tracked]); apperr.CodeOf(err) != apperr.NotFound {
		t.Errorf("the first tag past the bound: %v", err)
	}
	if got := span(d.ID, many[tracked]); len(got) != 0 {
		t.Errorf("the first tag past the bound was counted: %v", got)
	}
	if got := span(d.ID, ""); got[h0][mailgun.StatAccepted] != int64(2+len(batch)) {
		t.Errorf("the domain's accepted = %v; want %d", got[h0], 2+len(batch))
	}
	// At the bound a new tag is not tracked; a deleted tag's place is
	// taken by the next new one at once.
	insert(statEntry(d.ID, event.Queued, `{}`, "late", h0.Add(56*time.Minute)))
	if _, err := st.Tag(ctx, d.ID, "late"); apperr.CodeOf(err) != apperr.NotFound {
		t.Errorf("a new tag at the bound: %v", err)
	}
	if err := st.DeleteTag(ctx, d.ID, many[0]); err != nil {
		t.Fatal(err)
	}
	insert(statEntry(d.ID, event.Queued, `{}`, "late", h0.Add(57*time.Minute)))
	if g := tag(d.ID, "late"); !g.FirstSeen.Equal(h0.Add(57 * time.Minute)) {
		t.Errorf("a new tag after one was deleted at the bound = %+v", g)
	}

	// Retention: hours before the cutoff's go; tags unused since it go
	// with their counts.
	insert(statEntry(d.ID, event.Delivered, `{}`, "zulu,beta", h0.Add(3*time.Hour)),
		statEntry(d.ID, event.Delivered, `{}`, "", h0.Add(3*time.Hour)),
		statEntry(other.ID, event.Delivered, `{}`, "bobs", h0.Add(3*time.Hour)))
	if _, err := ev.Prune(ctx, h0.Add(2*time.Hour+30*time.Minute), 100); err != nil {
		t.Fatal(err)
	}
	if got := span(d.ID, ""); len(got) != 1 || got[h0.Add(3*time.Hour)][mailgun.StatDelivered] != 2 {
		t.Errorf("the domain's counts after retention = %v; want only +3h's 2 delivered", got)
	}
	if got := names(stats.TagPage{Limit: 10}); got != "beta zulu" {
		t.Errorf("tags after retention = %q; want the two used since the cutoff", got)
	}
	if got := span(d.ID, "zulu"); len(got) != 1 {
		t.Errorf("zulu's counts after retention = %v; want +3h's", got)
	}
	// PostgreSQL's stripes of recent hours merge without changing a sum.
	if err := ev.CompactCounts(ctx, h0.Add(4*time.Hour)); err != nil {
		t.Fatal(err)
	}
	var striped int
	db.Reader().QueryRowContext(ctx, `SELECT count(*) FROM stat_counts WHERE stripe <> 0`).Scan(&striped)
	if got := span(d.ID, ""); striped != 0 || got[h0.Add(3*time.Hour)][mailgun.StatDelivered] != 2 {
		t.Errorf("after CompactCounts: %d striped rows, counts %v", striped, got)
	}

	// A removed domain takes its tags and counts.
	box, _ := secret.NewBox(make([]byte, 32))
	if err := store.NewDomains(db, box).DeleteDomain(ctx, d.ID); err != nil {
		t.Fatal(err)
	}
	for _, table := range []string{"tags", "stat_counts"} {
		var left int
		db.Reader().QueryRowContext(ctx, `SELECT count(*) FROM `+table+` WHERE domain_id = $1`, d.ID).Scan(&left)
		if left != 0 {
			t.Errorf("%d rows of %s left after the domain was removed", left, table)
		}
	}
	if g := tag(other.ID, "bobs"); g.Name != "bobs" {
		t.Errorf("bob's tag = %+v", g)
	}
}

// testTagBoundCost: recording entries whose tags their domain cannot
// track, because it has stats.MaxTagsPerDomain others, costs no more than
// recording tracked ones. Each new tag's insert counted the domain's tags:
// at the bound, 10 untracked tags made a delivery's recording ten times
// slower on SQLite's single writer (12 ms against 1.2 ms). Timed
// alternately, so that other work on the machine weighs on both alike.
func testTagBoundCost(t *testing.T, db *store.DB) {
	ctx := context.Background()
	_, open := NewDomainRow(t, db, "alice", "alice.example")
	_, full := NewDomainRow(t, db, "bob", "bob.example")
	ev := store.NewEvents(db)
	at := time.Now()
	var fill []event.Entry
	for i := 0; i < stats.MaxTagsPerDomain; i += stats.MaxTagsPerEntry {
		var part []string
		for j := i; j < i+stats.MaxTagsPerEntry; j++ {
			part = append(part, fmt.Sprintf("other-%04d", j))
		}
		fill = append(fill, statEntry(full.ID, event.Queued, `{}`, strings.Join(part, ","), at))
	}
	if err := ev.Insert(ctx, fill); err != nil {
		t.Fatal(err)
	}
	var ten []string
	for i := range stats.MaxTagsPerEntry {
		ten = append(ten, fmt.Sprintf("campaign-%d", i))
	}
	tags := strings.Join(ten, ",")
	record := func(dom int64) time.Duration {
		start := time.Now()
		if err := ev.Insert(ctx, []event.Entry{statEntry(dom, event.Delivered, `{}`, tags, at)}); err != nil {
			t.Fatal(err)
		}
		return time.Since(start)
	}
	record(open.ID) // the tags are tracked from here on
	var tracked, untracked time.Duration
	for range 100 {
		tracked += record(open.ID)
		untracked += record(full.ID)
	}
	if untracked > 2*tracked {
		t.Errorf("100 recordings with 10 untracked tags took %v, with 10 tracked %v; want at most twice as long", untracked, tracked)
	}
}

// testTagsConcurrently: recordings of tagged entries from more
// transactions at once than PostgreSQL's pool has connections (20) all
// finish, each tag tracked once with every use counted. Reading the tags
// on the pool from inside the recording transactions waited for
// connections those transactions held.
func testTagsConcurrently(t *testing.T, db *store.DB) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	_, d := NewDomainRow(t, db, "alice", "alice.example")
	ev, st := store.NewEvents(db), store.NewStats(db)
	at := time.Now()
	const writers, each = 40, 5
	errs := make(chan error, writers)
	for w := range writers {
		go func() {
			for i := range each {
				tags := fmt.Sprintf("shared,writer-%d,use-%d", w, i)
				if err := ev.Insert(ctx, []event.Entry{statEntry(d.ID, event.Delivered, `{}`, tags, at)}); err != nil {
					errs <- err
					return
				}
			}
			errs <- nil
		}()
	}
	for range writers {
		if err := <-errs; err != nil {
			t.Fatalf("a recording: %v", err)
		}
	}
	counts, err := st.Counts(ctx, []int64{d.ID}, "shared", at.Add(-time.Hour), at.Add(time.Hour), false)
	if err != nil {
		t.Fatal(err)
	}
	var n int64
	for _, c := range counts {
		n += c[mailgun.StatDelivered]
	}
	list, err := st.ListTags(ctx, d.ID, stats.TagPage{Limit: 1000})
	if err != nil {
		t.Fatal(err)
	}
	if n != writers*each || len(list) != 1+writers+each {
		t.Errorf("shared counted %d times, %d tags; want %d and %d", n, len(list), writers*each, 1+writers+each)
	}
}
