package sending

import (
	"context"
	"slices"

	"github.com/postline/postline/internal/domain"
	"github.com/postline/postline/internal/suppression"
)

// prefetched is what the worker learned for a claimed delivery with one
// query per claim rather than one per delivery.
type prefetched struct {
	dom     domain.Domain
	loaded  bool // dom is valid; otherwise the attempt loads it alone
	verdict suppression.Verdict
	checked bool // verdict is valid; otherwise the attempt checks alone
}

// prefetch prepares a claimed batch: its domains (one read each), the
// suppression check for all its recipients (one query per domain) and its
// sends' content (one query for the batch, into the send cache). All are
// read after the claim, as an attempt of its own would read them, so a
// change of settings applies to every delivery claimed after it. Whatever
// fails here is done again by each attempt on its own, so prefetch never
// fails a delivery.
func (w *Worker) prefetch(ctx context.Context, ds []Delivery) []prefetched {
	out := make([]prefetched, len(ds))
	byDomain := map[int64][]int{}
	var sendIDs []int64
	for i, d := range ds {
		byDomain[d.DomainID] = append(byDomain[d.DomainID], i)
		if !slices.Contains(sendIDs, d.SendID) && !w.sends.has(d.SendID) {
			sendIDs = append(sendIDs, d.SendID)
		}
	}
	for domainID, idx := range byDomain {
		if dom, err := w.domains.ByID(ctx, domainID); err == nil {
			for _, i := range idx {
				out[i].dom, out[i].loaded = dom, true
			}
		}
		to := make([]string, len(idx))
		for k, i := range idx {
			to[k] = ds[i].Recipient
		}
		vs, err := w.supp.CheckMany(ctx, domainID, to)
		if err != nil {
			continue
		}
		for _, i := range idx {
			out[i].verdict, out[i].checked = vs[ds[i].Recipient], true
		}
	}
	if len(sendIDs) > 0 {
		if sends, err := w.store.LoadSends(ctx, sendIDs); err == nil {
			for _, s := range sends {
				w.sends.put(s.Send, s.Attachments)
			}
		}
	}
	return out
}
