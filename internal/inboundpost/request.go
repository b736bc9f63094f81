package inboundpost

import (
	"bytes"
	"context"
	"net/http"
	"net/url"
	"strconv"

	"github.com/postline/postline/internal/inboundroute"
)

// post makes p's request in its format and sends it.
func (d *Dispatcher) post(ctx context.Context, p Post, m message) (int, error) {
	key, err := d.deps.Keys.SigningKey(ctx, p.AccountID)
	if err != nil {
		return 0, err
	}
	messageURL := ""
	if p.Kind == KindNotify {
		name, err := d.deps.DomainName(ctx, p.DomainID)
		if err != nil {
			return 0, err
		}
		messageURL = d.cfg.PublicURL + "/api/domains/" + url.PathEscape(name) + "/inbound/" + p.StoredID
	}
	ts := strconv.FormatInt(d.cfg.Now().Unix(), 10)
	sig := signature{Timestamp: ts, Token: p.Token, Signature: Sign(key, ts, p.Token)}
	var body []byte
	var contentType string
	switch p.Format {
	case inboundroute.FormatJSON:
		body, contentType, err = postmarkBody(p, m, messageURL)
	case inboundroute.FormatRaw:
		body, contentType = m.raw, "message/rfc822"
	default:
		body, contentType, err = mailgunBody(p, m, sig, messageURL)
	}
	if err != nil {
		return 0, err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, p.URL, bytes.NewReader(body))
	if err != nil {
		return 0, err
	}
	req.Header.Set("Content-Type", contentType)
	req.Header.Set("User-Agent", "Postline-Inbound/1 ("+p.Format+" format)")
	// Every format carries the signature as headers too (json and raw
	// have no other place for it).
	req.Header.Set("Postline-Timestamp", sig.Timestamp)
	req.Header.Set("Postline-Token", sig.Token)
	req.Header.Set("Postline-Signature", sig.Signature)
	if messageURL != "" {
		req.Header.Set("Postline-Message-Url", messageURL)
	}
	return d.do(req)
}

// signature is Mailgun's: timestamp, token and their HMAC.
type signature struct {
	Timestamp, Token, Signature string
}
