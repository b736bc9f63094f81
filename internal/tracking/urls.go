package tracking

import (
	"net/url"
	"strings"

	"github.com/postline/postline/internal/domain"
	"github.com/postline/postline/internal/message"
)

// UnsubscribePlaceholder in a text or HTML body becomes the recipient's
// unsubscribe URL when the domain has unsubscribe tracking on.
const UnsubscribePlaceholder = "%unsubscribe_url%"

// URLs makes the tracking URLs put into messages.
type URLs struct {
	signer Signer
	public *url.URL
	// mailto adds a mailto: unsubscribe address under the authentication
	// domain, answered by the inbound SMTP listener.
	mailto bool
}

// NewURLs returns URLs under publicURL (the service's base URL), with
// mailto: unsubscribe addresses when inbound SMTP is on.
func NewURLs(signer Signer, publicURL string, mailto bool) (URLs, error) {
	u, err := url.Parse(strings.TrimRight(publicURL, "/"))
	if err != nil {
		return URLs{}, err
	}
	return URLs{signer: signer, public: u, mailto: mailto}, nil
}

// base is the scheme and host links use: the tracking domain when the
// domain has one (with the public URL's scheme and port), else the
// public URL itself.
func (u URLs) base(trackingDomain string) string {
	if trackingDomain == "" {
		return u.public.String()
	}
	host := trackingDomain
	if p := u.public.Port(); p != "" {
		host += ":" + p
	}
	return u.public.Scheme + "://" + host
}

// URL is the tracking URL of t for a domain whose tracking domain is td.
func (u URLs) URL(td string, t Token) string {
	s := u.base(td) + "/t/" + string(t.Kind) + "/" + u.signer.Encode(t)
	if t.Kind == Open {
		s += ".gif"
	}
	return s
}

// MailtoLocal is the local part prefix of mailto: unsubscribe addresses.
const MailtoLocal = "unsubscribe+"

// Apply adds what dom's tracking switches ask for to the message of
// delivery id: click URLs for links, the open pixel, List-Unsubscribe and
// the unsubscribe placeholder. It is deterministic, so a retry builds the
// same bytes.
func (u URLs) Apply(p *message.Params, dom domain.Domain, id int64) {
	td := dom.TrackingDomain
	if dom.Tracking.Clicks && p.HTML != "" {
		p.HTML = Rewrite(p.HTML, func(i int, _ string) string {
			return u.URL(td, Token{Kind: Click, DeliveryID: id, Link: i})
		})
	}
	if dom.Tracking.Unsubscribe {
		unsub := u.URL(td, Token{Kind: Unsubscribe, DeliveryID: id})
		p.ListUnsubscribe = "<" + unsub + ">"
		if u.mailto && dom.AuthDomain != "" {
			p.ListUnsubscribe += ", <mailto:" + MailtoLocal + u.signer.Encode(Token{Kind: Unsubscribe, DeliveryID: id}) +
				"@" + dom.AuthDomain + ">"
		}
		p.Text = strings.ReplaceAll(p.Text, UnsubscribePlaceholder, unsub)
		p.HTML = strings.ReplaceAll(p.HTML, UnsubscribePlaceholder, unsub)
	}
	if dom.Tracking.Opens && p.HTML != "" {
		p.HTML = AddPixel(p.HTML, u.URL(td, Token{Kind: Open, DeliveryID: id}))
	}
}

// MailtoToken returns the unsubscribe token of a mailto: unsubscribe
// address's local part, and false when it is not one. The token keeps its
// case: its MAC is case-sensitive, and mail systems keep local parts as
// written.
func MailtoToken(s Signer, local string) (Token, bool) {
	if len(local) <= len(MailtoLocal) || !strings.EqualFold(local[:len(MailtoLocal)], MailtoLocal) {
		return Token{}, false
	}
	return s.Decode(Unsubscribe, local[len(MailtoLocal):])
}
