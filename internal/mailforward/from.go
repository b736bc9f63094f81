package mailforward

import (
	"mime"
	"net/mail"
	"strings"
	"unicode"

	gomessage "github.com/emersion/go-message"
)

// maxNameRunes bounds the original display name kept in a rewritten From.
const maxNameRunes = 64

var addressParser = mail.AddressParser{WordDecoder: &mime.WordDecoder{CharsetReader: gomessage.CharsetReader}}

// fromAddresses are the addresses of the message's one From field; false
// when it has none, several, or one that is not a list of addresses.
func fromAddresses(m message) ([]*mail.Address, bool) {
	froms := m.values("From")
	if len(froms) != 1 {
		return nil, false
	}
	addrs, err := addressParser.ParseList(froms[0])
	if err == nil && len(addrs) > 0 {
		return addrs, true
	}
	if a, ok := lenientAddress(froms[0]); ok {
		return []*mail.Address{a}, true
	}
	return nil, false
}

// lenientAddress reads a From net/mail refuses as receivers do: the
// address in its last <...>, the text before it the name (RFC 2047 words
// decoded where they decode). Mail clients show such From fields, and
// DMARC reads their domain: a forward must rewrite them too.
func lenientAddress(v string) (*mail.Address, bool) {
	i := strings.LastIndexByte(v, '<')
	if i < 0 {
		return nil, false
	}
	j := strings.IndexByte(v[i:], '>')
	if j < 0 {
		return nil, false
	}
	a, err := mail.ParseAddress(v[i+1 : i+j])
	if err != nil || a.Name != "" {
		return nil, false
	}
	name := strings.Trim(strings.TrimSpace(v[:i]), `"`)
	if d, err := addressParser.WordDecoder.DecodeHeader(name); err == nil {
		name = d
	}
	a.Name = name
	return a, true
}

// rewriteFrom makes the message's From "NAME via DOMAIN"
// <forwarded@DOMAIN>, in the place of the original, as mailing lists do
// for senders whose DMARC policy would refuse the message from another
// server; NAME is the first author's display name, else their address
// with " at " for "@". Unless the message has a Reply-To (the authors'
// own choice of where replies go), one is added after From with the
// original authors. Everything written comes from parsed addresses,
// formatted again (net/mail: quoted, or RFC 2047-encoded when it has to
// be), never from the field as it came, so nothing in a display name can
// end the field or add another.
func rewriteFrom(m *message, addrs []*mail.Address, domainName string) {
	name := displayName(addrs[0]) + " via " + domainName
	from := newField("From", (&mail.Address{Name: name, Address: "forwarded@" + domainName}).String())
	var add []field
	if len(m.values("Reply-To")) == 0 {
		list := make([]string, len(addrs))
		for i, a := range addrs {
			list[i] = (&mail.Address{Name: cleanName(a.Name), Address: a.Address}).String()
		}
		add = append(add, newField("Reply-To", strings.Join(list, ", ")))
	}
	out := make([]field, 0, len(m.fields)+len(add))
	for _, f := range m.fields {
		if strings.EqualFold(f.key, "From") {
			out = append(out, from)
			out = append(out, add...)
			continue
		}
		out = append(out, f)
	}
	m.fields = out
}

// displayName is what a rewritten From shows of its author.
func displayName(a *mail.Address) string {
	if n := cleanName(a.Name); n != "" {
		return n
	}
	return cleanName(strings.Replace(a.Address, "@", " at ", 1))
}

// cleanName is a decoded display name on one line: control characters
// (CR, LF, NUL, ...) become spaces, runs of white space one space, and
// it is cut to maxNameRunes.
func cleanName(s string) string {
	s = strings.Map(func(r rune) rune {
		if unicode.IsControl(r) || r == unicode.ReplacementChar {
			return ' '
		}
		return r
	}, strings.ToValidUTF8(s, ""))
	s = strings.Join(strings.Fields(s), " ")
	if r := []rune(s); len(r) > maxNameRunes {
		s = strings.TrimSpace(string(r[:maxNameRunes]))
	}
	return s
}

// strictPolicy reports a DMARC policy under which a receiver refuses or
// files away mail From the domain that no aligned pass vouches for.
func strictPolicy(p string) bool { return p == "quarantine" || p == "reject" }

// domainOf is an address's domain, lower-case.
func domainOf(addr string) string {
	if i := strings.LastIndexByte(addr, '@'); i >= 0 {
		return strings.ToLower(strings.TrimSuffix(addr[i+1:], "."))
	}
	return ""
}
