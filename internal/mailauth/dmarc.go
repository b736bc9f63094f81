package mailauth

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"net/mail"
	"net/textproto"
	"strings"
	"time"

	"github.com/emersion/go-msgauth/dmarc"
	"golang.org/x/net/publicsuffix"
)

// checkDMARC finds the From domain's policy (the domain's own record,
// else its organizational domain's, RFC 7489 §6.6.3) and whether an SPF
// or DKIM pass is aligned with that domain.
func checkDMARC(ctx context.Context, r Resolver, msg []byte, spfRes Result, dkimRes []Result) Result {
	from, err := fromDomain(msg)
	if err != nil {
		return Result{Result: PermError, Reason: err.Error()}
	}
	out := Result{Domain: clip(from)}
	rec, sub, err := lookupDMARC(ctx, r, from)
	switch {
	case errors.Is(err, dmarc.ErrNoPolicy):
		out.Result, out.Reason = None, "no DMARC record"
		return out
	case dmarc.IsTempFail(err):
		out.Result, out.Reason = TempError, clip(err.Error())
		return out
	case err != nil:
		out.Result, out.Reason = PermError, clip(err.Error())
		return out
	}
	out.Policy = string(rec.Policy)
	if sub && rec.SubdomainPolicy != "" {
		out.Policy = string(rec.SubdomainPolicy)
	}
	if spfRes.Result == Pass && aligned(spfRes.Domain, from, rec.SPFAlignment) {
		out.Result, out.Reason = Pass, ""
		return out
	}
	for _, d := range dkimRes {
		if d.Result == Pass && aligned(d.Domain, from, rec.DKIMAlignment) {
			out.Result = Pass
			return out
		}
	}
	out.Result, out.Reason = Fail, "neither an SPF nor a DKIM pass is aligned with the From domain"
	return out
}

// lookupDMARC finds from's DMARC record: its own, else its organizational
// domain's (sub is then true), within 10 seconds.
func lookupDMARC(ctx context.Context, r Resolver, from string) (rec *dmarc.Record, sub bool, err error) {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	lookup := func(name string) ([]string, error) { return netResolver{r}.LookupTXT(ctx, name) }
	rec, err = dmarc.LookupWithOptions(from, &dmarc.LookupOptions{LookupTXT: lookup})
	if errors.Is(err, dmarc.ErrNoPolicy) {
		if org := orgDomain(from); org != from {
			rec, err = dmarc.LookupWithOptions(org, &dmarc.LookupOptions{LookupTXT: lookup})
			sub = true
		}
	}
	return rec, sub, err
}

// Policy is the DMARC policy that applies to mail From the domain
// (RFC 7489 §6.6.3: its own record's p=, else its organizational
// domain's sp= or p=): "none", "quarantine" or "reject", and "" when it
// publishes no record. A lookup that fails for now is an error; a record
// that cannot be read counts as none, as receivers read it.
func Policy(ctx context.Context, r Resolver, domain string) (string, error) {
	rec, sub, err := lookupDMARC(ctx, r, strings.ToLower(strings.TrimSuffix(domain, ".")))
	switch {
	case errors.Is(err, dmarc.ErrNoPolicy):
		return "", nil
	case dmarc.IsTempFail(err):
		return "", err
	case err != nil:
		return "", nil
	}
	if sub && rec.SubdomainPolicy != "" {
		return string(rec.SubdomainPolicy), nil
	}
	return string(rec.Policy), nil
}

// aligned compares an authenticated domain with the From domain: the same
// name in strict mode, the same organizational domain in relaxed mode
// (the default).
func aligned(authenticated, from string, mode dmarc.AlignmentMode) bool {
	a, f := strings.ToLower(authenticated), strings.ToLower(from)
	if a == "" {
		return false
	}
	if mode == dmarc.AlignmentStrict {
		return a == f
	}
	return orgDomain(a) == orgDomain(f)
}

// orgDomain is a name's organizational domain: its registrable part
// under the public suffix list, or the name itself when it has none.
func orgDomain(name string) string {
	if org, err := publicsuffix.EffectiveTLDPlusOne(name); err == nil {
		return org
	}
	return name
}

// fromDomain is the domain of the message's one From address. A message
// with no From, several From fields or addresses of several domains has
// no DMARC identity (RFC 7489 §6.6.1): that is an error.
func fromDomain(msg []byte) (string, error) {
	h, err := textproto.NewReader(bufio.NewReader(bytes.NewReader(msg))).ReadMIMEHeader()
	if err != nil && len(h) == 0 {
		return "", errors.New("the header cannot be read")
	}
	values := h.Values("From")
	switch {
	case len(values) == 0:
		return "", errors.New("no From field")
	case len(values) > 1:
		return "", errors.New("several From fields")
	}
	addrs, err := mail.ParseAddressList(values[0])
	if err != nil || len(addrs) == 0 {
		// A From an RFC 5322 parser refuses may still name one domain.
		if d := domainOf(strings.Trim(lastAngle(values[0]), " <>")); d != "" {
			return d, nil
		}
		return "", errors.New("the From field holds no address")
	}
	d := domainOf(addrs[0].Address)
	for _, a := range addrs[1:] {
		if domainOf(a.Address) != d {
			return "", errors.New("the From field names addresses of several domains")
		}
	}
	if d == "" {
		return "", errors.New("the From address has no domain")
	}
	return d, nil
}

// lastAngle is what the last <...> of s holds, else s.
func lastAngle(s string) string {
	if i := strings.LastIndexByte(s, '<'); i >= 0 {
		if j := strings.IndexByte(s[i:], '>'); j > 0 {
			return s[i+1 : i+j]
		}
	}
	return s
}

// domainOf is an address's domain, lower-case without a trailing dot; ""
// when it has none.
func domainOf(addr string) string {
	i := strings.LastIndexByte(addr, '@')
	if i < 0 {
		return ""
	}
	return strings.ToLower(strings.TrimSuffix(strings.TrimSpace(addr[i+1:]), "."))
}

// clip keeps a value shown in a header and the log short and on one line.
func clip(s string) string {
	s = strings.Map(func(r rune) rune {
		if r < 0x20 || r == 0x7f {
			return ' '
		}
		return r
	}, s)
	if len(s) > 200 {
		s = strings.ToValidUTF8(s[:200], "")
	}
	return s
}
