package sending

import (
	"context"
	"strings"
	"time"

	"github.com/postline/postline/internal/apperr"
	"github.com/postline/postline/internal/tracking"
)

// Copy is one recipient's copy of a sent message as Postline builds it
// now from what it accepted: Postline does not keep the bytes it sent.
type Copy struct {
	// Recipient is the copy's recipient; Recipients are every recipient
	// of the message id, in order.
	Recipient  string
	Recipients []string
	// Raw is the message before its DKIM signature: the signature, made
	// at sending, is not kept.
	Raw []byte
	// Unprocessed says the send's attachment processing (watermarks,
	// archives) has not run yet, so the files are as accepted: the first
	// delivery attempt processes them.
	Unprocessed bool
	// OpenURL is the open-tracking URL this copy's pixel would load ("" when
	// the server does not track): a preview that must not count an open
	// leaves it out.
	OpenURL string
}

// ErrPruned is the answer for a message whose content is no longer kept.
var ErrPruned = apperr.Errorf(apperr.NotFound,
	"The message's content is no longer kept: Postline keeps it as long as its log entries (--log-retention).")

// Rebuild builds the copy of message id messageID for recipient (the
// first recipient when ""), through the same code a delivery attempt
// uses (compose), without processing attachments, signing or sending. A
// message id or recipient that is not the domain's is NotFound, and so is
// a message whose content was pruned (ErrPruned).
func (w *Worker) Rebuild(ctx context.Context, domainID int64, messageID, recipient string) (Copy, error) {
	ds, err := w.store.MessageDeliveries(ctx, domainID, cleanMessageID(messageID))
	if err != nil {
		return Copy{}, err
	}
	if len(ds) == 0 {
		return Copy{}, apperr.Errorf(apperr.NotFound, "Message not found")
	}
	var c Copy
	d := ds[0].Delivery
	for _, m := range ds {
		c.Recipients = append(c.Recipients, m.Recipient)
		if recipient != "" && strings.EqualFold(m.Recipient, recipient) && !strings.EqualFold(d.Recipient, recipient) {
			d = m.Delivery
		}
	}
	if recipient != "" && !strings.EqualFold(d.Recipient, recipient) {
		return Copy{}, apperr.Errorf(apperr.NotFound, "The message has no recipient %s", recipient)
	}
	c.Recipient = d.Recipient
	snd, atts, err := w.store.LoadSend(ctx, d.SendID)
	if err != nil {
		return Copy{}, err
	}
	if snd.Pruned {
		return Copy{}, ErrPruned
	}
	dom, err := w.domains.ByID(ctx, domainID)
	if err != nil {
		return Copy{}, err
	}
	c.Unprocessed = len(snd.Raw) == 0 && !snd.Processed && strings.TrimSpace(snd.Options) != ""
	if c.Raw, err = w.compose(dom, d, snd, atts); err != nil {
		return Copy{}, err
	}
	if w.cfg.Tracking != nil {
		c.OpenURL = w.cfg.Tracking.URL(dom.TrackingDomain, tracking.Token{Kind: tracking.Open, DeliveryID: d.ID})
	}
	return c, nil
}

// PruneContent empties the content of the sends whose deliveries all
// ended before before (the log's cutoff): their copies can no longer be
// rebuilt (ErrPruned). The HTML keeps its links (tracking.LinksOnly), so
// the click links of old messages still redirect; the rows stay for
// tracking, unsubscribes and late complaints. It returns how many sends
// were emptied.
func (s *Service) PruneContent(ctx context.Context, before time.Time, batch int) (int64, error) {
	return s.store.PruneSends(ctx, before, s.cfg.Now(), batch, tracking.LinksOnly)
}
