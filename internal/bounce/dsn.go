package bounce

import (
	"bufio"
	"bytes"
	"cmp"
	"net/mail"
	"strings"
)

// field is one "Name: value" line of a delivery-status or feedback-report
// body, with continuation lines unfolded. Name is lower-case.
type field struct{ name, value string }

// fieldGroups splits a delivery-status body (RFC 3464 section 2.1) into its
// blank-line separated groups. It is deliberately lenient: lines without a
// colon are skipped and values are clipped to MaxFieldLen.
func fieldGroups(body []byte) [][]field {
	var groups [][]field
	var cur []field
	sc := bufio.NewScanner(bytes.NewReader(body))
	sc.Buffer(make([]byte, 0, 4096), maxTextBytes)
	for sc.Scan() && len(groups) <= MaxRecipients {
		line := strings.TrimRight(sc.Text(), "\r")
		switch {
		case strings.TrimSpace(line) == "":
			if len(cur) > 0 {
				groups = append(groups, cur)
				cur = nil
			}
		case (line[0] == ' ' || line[0] == '\t') && len(cur) > 0:
			last := &cur[len(cur)-1]
			last.value = clip(last.value + " " + strings.TrimSpace(line))
		default:
			name, value, ok := strings.Cut(line, ":")
			if ok && len(cur) < 100 {
				cur = append(cur, field{strings.ToLower(strings.TrimSpace(name)), clip(strings.TrimSpace(value))})
			}
		}
	}
	if len(cur) > 0 {
		groups = append(groups, cur)
	}
	return groups
}

func get(g []field, name string) string {
	for _, f := range g {
		if f.name == name {
			return f.value
		}
	}
	return ""
}

// dsnReports turns message/delivery-status bodies into reports: one per
// per-recipient group whose Action is a failure (RFC 3464 section 2.3.3).
func dsnReports(bodies [][]byte) []Report {
	out := []Report{}
	found := false
	for _, body := range bodies {
		for _, g := range fieldGroups(body) {
			final, orig := get(g, "final-recipient"), get(g, "original-recipient")
			if final == "" && orig == "" {
				continue // the per-message group, or noise
			}
			found = true
			r := Report{
				Recipient:      cmp.Or(typedAddress(orig), typedAddress(final)),
				Status:         enhancedCode(get(g, "status")),
				DiagnosticCode: get(g, "diagnostic-code"),
				RemoteMTA:      host(get(g, "remote-mta")),
			}
			if r.Status == "" {
				r.Status = statusFromText(r.DiagnosticCode)
			}
			action, _, _ := strings.Cut(strings.ToLower(get(g, "action")), " ")
			switch {
			case action == "failed":
				r.Kind = KindPermanent
			case action == "delayed":
				r.Kind = KindTemporary
			case action == "delivered" || action == "relayed" || action == "expanded":
				continue
			default:
				r.Kind = kindOfStatus(r.Status)
				if r.Kind == "" {
					continue // a 2.x.x status: not a failure
				}
			}
			if len(out) == MaxRecipients {
				return out
			}
			out = append(out, r)
		}
	}
	if !found {
		return []Report{{Kind: KindUnknown}}
	}
	return out
}

// kindOfStatus maps a status class to a Kind; "" for success (2.x.x).
func kindOfStatus(status string) Kind {
	switch {
	case strings.HasPrefix(status, "5."):
		return KindPermanent
	case strings.HasPrefix(status, "4."):
		return KindTemporary
	case strings.HasPrefix(status, "2."):
		return ""
	}
	return KindUnknown
}

// complaints turns message/feedback-report bodies (RFC 5965 section 3.1)
// into one complaint per Original-Rcpt-To, or one for the original
// message's To when there is none.
func (p *parts) complaints() []Report {
	out := []Report{}
	for _, body := range p.feedback {
		var fields []field
		for _, g := range fieldGroups(body) {
			fields = append(fields, g...)
		}
		ft := strings.ToLower(get(fields, "feedback-type"))
		var rcpts []string
		for _, f := range fields {
			if f.name == "original-rcpt-to" && len(rcpts) < MaxRecipients {
				rcpts = append(rcpts, typedAddress(f.value))
			}
		}
		if len(rcpts) == 0 && p.original != nil {
			rcpts = append(rcpts, headerAddress(p.original.Get("To")))
		}
		if len(rcpts) == 0 {
			rcpts = append(rcpts, "")
		}
		for _, rc := range rcpts {
			if len(out) == MaxRecipients {
				return out
			}
			out = append(out, Report{Kind: KindComplaint, Recipient: rc, FeedbackType: ft})
		}
	}
	return out
}

// typedAddress returns the address of an "rfc822; user@example.com" value
// (the address type is optional), lower-case and without angle brackets.
func typedAddress(v string) string {
	a := strings.Trim(strings.TrimSpace(untyped(v)), "<>")
	if !strings.Contains(a, "@") || strings.ContainsAny(a, " \t<>") {
		return ""
	}
	return strings.ToLower(a)
}

// untyped drops the "type;" prefix of a DSN field value.
func untyped(v string) string {
	if _, rest, ok := strings.Cut(v, ";"); ok {
		return strings.TrimSpace(rest)
	}
	return strings.TrimSpace(v)
}

// host returns the host name of a Remote-MTA value: Gmail's
// "dns; mx.example.net. (192.0.2.10, the server for ...)" gives
// "mx.example.net".
func host(v string) string {
	f := strings.Fields(untyped(v))
	if len(f) == 0 {
		return ""
	}
	return strings.TrimSuffix(f[0], ".")
}

// headerAddress returns the first address of a To header, lower-case.
func headerAddress(v string) string {
	if list, err := mail.ParseAddressList(clip(v)); err == nil && len(list) > 0 {
		return strings.ToLower(list[0].Address)
	}
	if addrs := findAddresses(v); len(addrs) > 0 {
		return addrs[0]
	}
	return ""
}
