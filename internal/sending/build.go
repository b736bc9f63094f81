package sending

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/postline/postline/internal/attach"
	"github.com/postline/postline/internal/domain"
	"github.com/postline/postline/internal/message"
)

// build makes the signed message for one delivery from the stored send,
// and says whether the send is a forward (RawMessage.Forward).
// Attachments are processed (watermark, archive, encryption) once per send
// by whichever worker gets there first, and the result replaces the
// originals, so every recipient and every retry gets the same files.
func (w *Worker) build(ctx context.Context, dom domain.Domain, d Delivery) (msg []byte, forward bool, err error) {
	snd, atts, err := w.sends.get(ctx, d.SendID)
	if err != nil {
		return nil, false, err
	}
	msg, err = w.buildSend(ctx, dom, d, snd, atts)
	return msg, snd.Headers[forwardHeader] != "", err
}

func (w *Worker) buildSend(ctx context.Context, dom domain.Domain, d Delivery, snd Send, atts []Attachment) ([]byte, error) {
	if len(snd.Raw) == 0 && !snd.Processed && strings.TrimSpace(snd.Options) != "" {
		var err error
		if atts, err = w.process(ctx, snd, atts); err != nil {
			return nil, err
		}
	}
	msg, err := w.compose(dom, d, snd, atts)
	if err != nil {
		return nil, err
	}
	return w.sign(dom, msg)
}

// compose is one delivery's message before its DKIM signature: the
// stored send built for d's recipient (atts already processed when the
// send asks for processing) with the tracking in force. It is
// deterministic but for MIME boundaries: a retry, and Rebuild, build the
// same message.
func (w *Worker) compose(dom domain.Domain, d Delivery, snd Send, atts []Attachment) ([]byte, error) {
	if len(snd.Raw) > 0 {
		// Submitted over SMTP: the client's message as it is, for every
		// recipient, with the tracking in force.
		msg := snd.Raw
		if w.cfg.Tracking != nil {
			opens, clicks := rawTracking(snd, dom)
			msg = w.cfg.Tracking.ApplyRaw(msg, dom, d.ID, opens, clicks)
		}
		return msg, nil
	}
	headers := snd.Headers
	if _, ok := headers[trackHeader]; ok {
		// The message's own tracking switches (the /v3/ API's o:tracking).
		dom.Tracking.Opens, dom.Tracking.Clicks = rawTracking(snd, dom)
		headers = maps.Clone(headers)
		delete(headers, trackHeader)
	}
	p := message.Params{From: snd.From, FromName: snd.FromName, To: d.Recipient, ToName: snd.Addressing.NameOf(d.Recipient),
		VisibleTo: snd.Addressing.To, VisibleCc: snd.Addressing.Cc, ReplyTo: snd.ReplyTo,
		Subject: snd.Subject, Text: snd.Text, HTML: snd.HTML, Headers: headers,
		MessageID: "<" + d.MessageID + ">", Date: snd.CreatedAt}
	for _, a := range atts {
		p.Attachments = append(p.Attachments, message.Attachment{Filename: a.Filename, ContentType: a.ContentType, Data: a.Data, ContentID: a.ContentID})
	}
	if w.cfg.Tracking != nil {
		w.cfg.Tracking.Apply(&p, dom, d.ID)
	}
	ownHeaders(&p)
	return message.Build(p)
}

// ownHeaders moves the sender's Sender and List-Unsubscribe from the
// stored headers into the fields Build writes; the sender's unsubscribe
// replaces the domain's.
func ownHeaders(p *message.Params) {
	v, ok := p.Headers[senderHeader]
	lu, hasLU := p.Headers[listUnsubHeader]
	_, hasPost := p.Headers[listPostHeader]
	if !ok && !hasLU && !hasPost {
		return
	}
	p.Headers = maps.Clone(p.Headers)
	if ok {
		p.Sender = v
	}
	if hasLU {
		p.ListUnsubscribe, p.ListUnsubscribePost = lu, p.Headers[listPostHeader]
	}
	for _, h := range []string{senderHeader, listUnsubHeader, listPostHeader} {
		delete(p.Headers, h)
	}
}

func (w *Worker) sign(dom domain.Domain, raw []byte) ([]byte, error) {
	signer, err := w.signers.get(dom)
	if err != nil {
		return nil, err
	}
	started := time.Now()
	signed, err := signer.Sign(raw)
	w.cfg.Metrics.signed(time.Since(started))
	return signed, err
}

// signerCache keeps one parsed DKIM signer per domain and signing
// identity: parsing the key costs more than a small message's signature.
type signerCache struct {
	mu sync.Mutex
	m  map[signerKey]*message.Signer
}

type signerKey struct {
	domainID       int64
	name, selector string
	keySum         [32]byte // of the RSA key and the Ed25519 key
	ed25519        bool
}

func (c *signerCache) get(dom domain.Domain) (*message.Signer, error) {
	name := dom.Name
	if dom.AuthDomain != "" { // d= the authentication domain when there is one
		name = dom.AuthDomain
	}
	k := signerKey{domainID: dom.ID, name: name, selector: dom.DKIMSelector, ed25519: dom.DKIMEd25519,
		keySum: sha256.Sum256(append(slices.Clip(dom.DKIMPrivateKey), dom.DKIMEd25519Key...))}
	c.mu.Lock()
	defer c.mu.Unlock()
	if s, ok := c.m[k]; ok {
		return s, nil
	}
	s, err := message.NewSigner(name, dom.DKIMSelector, dom.DKIMPrivateKey)
	if err == nil && dom.DKIMEd25519 { // a second signature, beside the RSA one
		s, err = s.WithEd25519(dom.DKIMEd25519Selector(), dom.DKIMEd25519Key)
	}
	if err != nil {
		return nil, err
	}
	if c.m == nil || len(c.m) >= 1024 { // a bound, not an LRU: domains rarely change keys
		c.m = map[signerKey]*message.Signer{}
	}
	c.m[k] = s
	return s, nil
}

// errAttachments is a send whose attachments could not be processed: the
// delivery fails with reason attachment_processing_failed.
var errAttachments = errors.New("attachment processing failed")

func (w *Worker) process(ctx context.Context, snd Send, atts []Attachment) ([]Attachment, error) {
	// Two sends' attachments at most are processed at once per process:
	// decoded images and PDFs take up to a few hundred megabytes each.
	select {
	case w.heavy <- struct{}{}:
		defer func() { <-w.heavy }()
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	// Another attempt of the same send may have processed it while this
	// one waited: use its files rather than doing the work again.
	w.sends.forget(snd.ID)
	if fresh, stored, err := w.sends.get(ctx, snd.ID); err != nil {
		return nil, err
	} else if fresh.Processed {
		return stored, nil
	}
	text, err := openOptions(w.cfg.Sealer, snd.Options)
	if err != nil {
		return nil, err
	}
	opts, err := attach.ParseOptions(text)
	if err != nil {
		return nil, err
	}
	files := make([]attach.File, len(atts))
	for i, a := range atts {
		files[i] = attach.File{Name: a.Filename, ContentType: a.ContentType, Data: a.Data}
	}
	process := w.cfg.Process
	if process == nil {
		process = attach.Process
	}
	res, err := process(ctx, files, opts)
	if err != nil {
		if ctx.Err() != nil {
			return nil, err
		}
		return nil, fmt.Errorf("%w: %v", errAttachments, err)
	}
	out := make([]Attachment, len(res.Files))
	for i, f := range res.Files {
		out[i] = Attachment{Filename: f.Name, ContentType: f.ContentType, Data: f.Data}
	}
	won, err := w.store.SaveProcessed(ctx, snd.ID, out)
	if err != nil {
		return nil, err
	}
	w.sends.forget(snd.ID)
	if !won { // another worker processed it first: use its files
		_, stored, err := w.sends.get(ctx, snd.ID)
		return stored, err
	}
	return out, nil
}

// envelopeFrom is the MAIL FROM: the from address, or, when the domain has
// an authentication domain, a per-delivery bounce address under it
// (VERP) so that bounces come back to this service and name the delivery.
// A forward's is always such an address, under the authentication domain
// or else the domain itself (which receives: its MX is this service), so
// that a forward's bounces come back here and are the forward's, never
// the original sender's (SRS's purpose; the original sender is not in it).
func (w *Worker) envelopeFrom(dom domain.Domain, d Delivery, forward bool) string {
	switch {
	case len(w.cfg.VERPKey) == 0:
		return d.Sender
	case dom.AuthDomain != "":
		return VERPAddress(w.cfg.VERPKey, d.ID, dom.AuthDomain)
	case forward:
		return VERPAddress(w.cfg.VERPKey, d.ID, dom.Name)
	}
	return d.Sender
}

// VERPAddress is the bounce address of delivery id under authDomain:
// bounce+ID-MAC@authDomain, where MAC authenticates ID so that bounce
// reports for made-up ids are ignored.
func VERPAddress(key []byte, id int64, authDomain string) string {
	return fmt.Sprintf("bounce+%d-%s@%s", id, verpMAC(key, id), authDomain)
}

// ParseVERP returns the delivery id of a bounce address made by
// VERPAddress, and false for anything else.
func ParseVERP(key []byte, addr string) (int64, bool) {
	local, _, ok := strings.Cut(strings.ToLower(addr), "@")
	rest, ok2 := strings.CutPrefix(local, "bounce+")
	idText, mac, ok3 := strings.Cut(rest, "-")
	if !ok || !ok2 || !ok3 {
		return 0, false
	}
	id, err := strconv.ParseInt(idText, 10, 64)
	if err != nil || !hmac.Equal([]byte(mac), []byte(verpMAC(key, id))) {
		return 0, false
	}
	return id, true
}

func verpMAC(key []byte, id int64) string {
	m := hmac.New(sha256.New, key)
	fmt.Fprintf(m, "verp:%d", id)
	return hex.EncodeToString(m.Sum(nil))[:16]
}
