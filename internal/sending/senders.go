package sending

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/emersion/go-message/mail"

	"github.com/postline/postline/internal/apperr"
	"github.com/postline/postline/internal/domain"
	"github.com/postline/postline/internal/emailaddr"
	"github.com/postline/postline/internal/message"
)

// ErrSenderHeader marks a refusal by the sender rules: a From, Sender,
// Resent-From or Resent-Sender address outside the submitter's verified
// domains, or sender fields in a number RFC 5322 does not allow. A door
// answers it as a policy refusal (SMTP 550 5.7.1), other invalid messages
// as malformed ones.
var ErrSenderHeader = errors.New("sending: a sender header breaks the sender rules")

// ErrUnsafeBytes marks a message refused for a bare CR or a NUL: SMTP
// smuggling (message.ErrUnsafeBytes). Doors answer it SMTP 550 5.6.0.
var ErrUnsafeBytes = message.ErrUnsafeBytes

// SenderDomains lists the domains a submitter may speak for: the account's
// domains its key may use (unverified ones never count). It is called at
// most once per message, and for API sends only when an address is not at
// the send's own domain.
type SenderDomains func(ctx context.Context) ([]domain.Domain, error)

// OwnerOf returns the verified domain of doms that addr is at: by the
// domain's name or its authentication domain, compared as A-labels.
func OwnerOf(doms []domain.Domain, addr string) (domain.Domain, bool) {
	host := hostOf(addr)
	if host == "" {
		return domain.Domain{}, false
	}
	for _, d := range doms {
		if d.Verified() && at(d, host) {
			return d, true
		}
	}
	return domain.Domain{}, false
}

// hostOf is addr's domain as a lower-case A-label, "" when addr is not
// an address with a domain name.
func hostOf(addr string) string {
	a, err := emailaddr.Parse(strings.TrimSpace(addr))
	if err != nil || a.Literal {
		return ""
	}
	return strings.TrimSuffix(strings.ToLower(a.ASCIIDomain), ".")
}

func at(d domain.Domain, host string) bool {
	return host != "" && (d.Name == host || (d.AuthDomain != "" && d.AuthDomain == host))
}

// senderFields are the fields that say who speaks for a message (RFC 5322
// §3.6.2 and §3.6.6): every address in them must be the submitter's.
var senderFields = []string{"From", "Sender", "Resent-From", "Resent-Sender"}

func isSenderField(name string) bool {
	for _, f := range senderFields {
		if strings.EqualFold(f, name) {
			return true
		}
	}
	return false
}

// senderCheck checks addresses against a send's own domain first and
// loads the submitter's other domains only when one is elsewhere.
type senderCheck struct {
	own    *domain.Domain // nil: none
	lookup SenderDomains
	doms   []domain.Domain
	loaded bool
}

// owner returns the domain addr is at, or false.
func (c *senderCheck) owner(ctx context.Context, addr string) (domain.Domain, bool, error) {
	host := hostOf(addr)
	if c.own != nil && at(*c.own, host) {
		return *c.own, true, nil
	}
	if !c.loaded && c.lookup != nil {
		doms, err := c.lookup(ctx)
		if err != nil {
			return domain.Domain{}, false, err
		}
		c.doms, c.loaded = doms, true
	}
	d, ok := OwnerOf(c.doms, addr)
	return d, ok, nil
}

// addresses parses a sender field's value (a mailbox list, RFC 5322
// §3.4, display names decoded in any charset as the rest of the intake
// does); a value that is not one is refused, never guessed at.
func addresses(v string) ([]string, bool) {
	list, err := mail.ParseAddressList(v)
	if err != nil || len(list) == 0 {
		return nil, false
	}
	out := make([]string, len(list))
	for i, a := range list {
		out[i] = a.Address
	}
	return out, true
}

// notYours is the refusal of an address outside the submitter's domains,
// on field (the request field or the raw message's "message").
func notYours(field, header, addr string) error {
	msg := fmt.Sprintf("The %s address %s is not at a verified domain of this account.", header, addr)
	if host := hostOf(addr); host != "" {
		msg = fmt.Sprintf("The %s header's domain %s is not a verified domain of this account (%s).", header, host, addr)
	}
	return senderError(field, msg)
}

func senderError(field, msg string) error {
	return &apperr.Error{Code: apperr.Invalid, Message: msg, Fields: map[string][]string{field: {msg}}, Err: ErrSenderHeader}
}

// checkRequestSenders applies the sender rules to an API send: its Sender
// (the /v3/ API's h:Sender) and Resent-From and Resent-Sender custom
// headers must be at the account's verified domains. With Mailgun's
// %recipient.KEY% substitution they may hold no variable: the check would
// otherwise see another value than the one sent.
func (s *Service) checkRequestSenders(ctx context.Context, d domain.Domain, r Request, headers map[string]string) error {
	type field struct{ name, header, value string }
	var fields []field
	if v := strings.TrimSpace(r.Sender); v != "" {
		fields = append(fields, field{"sender", "Sender", v})
	}
	for _, name := range slices.Sorted(maps.Keys(headers)) {
		if isSenderField(name) {
			fields = append(fields, field{"headers." + name, name, headers[name]})
		}
	}
	c := senderCheck{own: &d, lookup: r.Senders}
	for _, f := range fields {
		if r.Percent && strings.Contains(f.value, "%") {
			return senderError(f.name, fmt.Sprintf("The %s header cannot hold %%...%% variables: it must name the account's own address.", f.header))
		}
		addrs, ok := addresses(f.value)
		if !ok {
			return senderError(f.name, fmt.Sprintf("The %s header must be a list of email addresses.", f.header))
		}
		for _, a := range addrs {
			_, mine, err := c.owner(ctx, a)
			if err != nil {
				return err
			}
			if !mine {
				return notYours(f.name, f.header, a)
			}
		}
	}
	return nil
}
