package mailauth

import (
	"bytes"
	"strings"

	"github.com/emersion/go-msgauth/authres"
)

// Header is the value of the Authentication-Results field (RFC 8601)
// that authservID, the receiving server's name, adds for r; folded, one
// result a line.
func (r Results) Header(authservID string) string {
	smtp := &authres.SPFResult{Value: authres.ResultValue(r.SPF.Result), Reason: r.SPF.Reason}
	if r.SPF.Scope == "helo" {
		smtp.Helo = r.SPF.Domain
	} else {
		smtp.From = r.SPF.Domain
	}
	results := []authres.Result{smtp}
	for _, d := range r.DKIM {
		results = append(results, &authres.DKIMResult{Value: authres.ResultValue(d.Result), Reason: d.Reason, Domain: d.Domain})
	}
	if len(r.DKIM) == 0 {
		results = append(results, &authres.DKIMResult{Value: authres.ResultNone})
	}
	results = append(results, &authres.DMARCResult{Value: authres.ResultValue(r.DMARC.Result), Reason: r.DMARC.Reason, From: r.DMARC.Domain})
	v := authres.Format(clip(authservID), results)
	// A result without parameters ends in a space: "dkim=none ;".
	v = strings.TrimSpace(strings.ReplaceAll(v, " ;", ";"))
	// One result a line: "id; spf=...;\r\n\tdkim=...".
	return strings.ReplaceAll(v, "; ", ";\r\n\t")
}

// untrustedName is what Untrust renames a claiming field to: kept for
// whoever investigates, read by no one as a verdict.
const untrustedName = "X-Untrusted-Authentication-Results"

// Untrust renames the Authentication-Results fields of msg's header that
// claim authservID (any case): only this server may write those, and a
// sender's copy would pass for its verdict (RFC 8601 §5). Other fields and
// every other byte are kept; msg itself is not changed.
func Untrust(msg []byte, authservID string) []byte {
	end := headerEnd(msg)
	var out []byte
	for start := 0; start < end; {
		next := fieldEnd(msg, start, end)
		name, value, ok := bytes.Cut(msg[start:next], []byte(":"))
		if ok && strings.EqualFold(string(bytes.TrimSpace(name)), "Authentication-Results") && claims(string(value), authservID) {
			if out == nil {
				out = append(make([]byte, 0, len(msg)+len(untrustedName)*2), msg[:start]...)
			}
			out = append(out, untrustedName+":"...)
			out = append(out, value...)
		} else if out != nil {
			out = append(out, msg[start:next]...)
		}
		start = next
	}
	if out == nil {
		return msg
	}
	return append(out, msg[end:]...)
}

// claims reports whether an Authentication-Results value names authservID
// as its authserv-id (the first token, before ";" or a version).
func claims(value, authservID string) bool {
	id, _, _ := strings.Cut(value, ";")
	id = strings.TrimSpace(unfold(id))
	if f := strings.Fields(id); len(f) > 0 {
		id = f[0]
	}
	return id != "" && strings.EqualFold(strings.TrimSuffix(id, "."), strings.TrimSuffix(authservID, "."))
}

func unfold(s string) string {
	return strings.NewReplacer("\r\n", " ", "\n", " ", "\t", " ").Replace(s)
}

// headerEnd is the offset of the blank line ending msg's header (the
// whole message when it has none).
func headerEnd(msg []byte) int {
	if bytes.HasPrefix(msg, []byte("\r\n")) || bytes.HasPrefix(msg, []byte("\n")) {
		return 0
	}
	i := bytes.Index(msg, []byte("\n\r\n"))
	j := bytes.Index(msg, []byte("\n\n"))
	switch {
	case i < 0 && j < 0:
		return len(msg)
	case i < 0 || (j >= 0 && j < i):
		return j + 1
	}
	return i + 1
}

// fieldEnd is the offset after the field starting at start: its line and
// the continuation lines (starting with a space or tab) after it.
func fieldEnd(msg []byte, start, end int) int {
	i := start
	for {
		nl := bytes.IndexByte(msg[i:end], '\n')
		if nl < 0 {
			return end
		}
		i += nl + 1
		if i >= end || (msg[i] != ' ' && msg[i] != '\t') {
			return i
		}
	}
}
