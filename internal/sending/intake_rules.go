package sending

import (
	"context"
	"fmt"
	"strings"

	"github.com/emersion/go-message/textproto"

	"github.com/postline/postline/internal/domain"
)

// checkRawSenders applies the sender rules to a whole message's header
// and returns the domain that sends it: the one its first From is at.
// Field names are compared case-insensitively (FROM:, from:), as
// receivers do.
func checkRawSenders(ctx context.Context, h textproto.Header, in RawInput) (domain.Domain, error) {
	froms := h.Values("From")
	switch {
	case len(froms) == 0:
		return domain.Domain{}, rawError("The message needs a From header with an address")
	case len(froms) > 1:
		return domain.Domain{}, senderError("message", fmt.Sprintf("The message has %d From header fields: RFC 5322 allows exactly one.", len(froms)))
	}
	if n := len(h.Values("Sender")); n > 1 {
		return domain.Domain{}, senderError("message", fmt.Sprintf("The message has %d Sender header fields: RFC 5322 allows at most one.", n))
	}
	if err := checkResentBlocks(h); err != nil {
		return domain.Domain{}, err
	}
	c := senderCheck{own: in.Domain, lookup: in.Senders}
	var first domain.Domain
	firstSeen := false
	for f := h.Fields(); f.Next(); {
		name := f.Key()
		if !isSenderField(name) {
			continue
		}
		if raw, err := f.Raw(); err == nil {
			if written, _, _ := strings.Cut(string(raw), ":"); strings.TrimRight(written, " \t") != written {
				// Obsolete syntax (RFC 5322 §4.5) that receivers read
				// differently: some see no From at all.
				return domain.Domain{}, senderError("message", fmt.Sprintf("The %s header has white space before its colon.", canonical(name)))
			}
		}
		addrs, ok := addresses(f.Value())
		if !ok {
			return domain.Domain{}, senderError("message", fmt.Sprintf("The %s header must be a list of email addresses.", canonical(name)))
		}
		for _, a := range addrs {
			d, mine, err := c.owner(ctx, a)
			if err != nil {
				return domain.Domain{}, err
			}
			if !mine {
				return domain.Domain{}, notYours("message", canonical(name), a)
			}
			if !firstSeen && strings.EqualFold(name, "From") {
				first, firstSeen = d, true
			}
		}
	}
	if in.Domain != nil && first.Name != in.Domain.Name {
		return domain.Domain{}, senderError("message", fmt.Sprintf("The From header's first address must be at %s, the domain the message is sent through.", in.Domain.Name))
	}
	return first, nil
}

// canonical spells a sender field as RFC 5322 does.
func canonical(name string) string {
	for _, f := range senderFields {
		if strings.EqualFold(f, name) {
			return f
		}
	}
	return name
}

// checkResentBlocks checks the Resent-* fields (RFC 5322 §3.6.6): they
// come in blocks of consecutive fields, one block per resending, each with
// one Resent-Date and one Resent-From and at most one of each field. A
// field name seen again starts the next block.
func checkResentBlocks(h textproto.Header) error {
	var block map[string]bool
	end := func() error {
		if block != nil && (!block["Resent-Date"] || !block["Resent-From"]) {
			return senderError("message", "Each block of Resent-* header fields needs one Resent-Date and one Resent-From (RFC 5322 §3.6.6), "+
				"with at most one of each Resent-* field.")
		}
		block = nil
		return nil
	}
	for f := h.Fields(); f.Next(); {
		k := f.Key() // canonical: Resent-From for RESENT-FROM
		if !hasPrefixFold(k, "Resent-") {
			if err := end(); err != nil {
				return err
			}
			continue
		}
		if block[k] {
			if err := end(); err != nil {
				return err
			}
		}
		if block == nil {
			block = map[string]bool{}
		}
		block[k] = true
	}
	return end()
}
