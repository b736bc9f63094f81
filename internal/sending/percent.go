package sending

import (
	"encoding/json"
	"regexp"
	"strconv"
	"strings"
	"unicode"

	"github.com/postline/postline/internal/event"
	"github.com/postline/postline/internal/templates"
)

// Mailgun's batch syntax: %recipient.KEY% takes the recipient's value of
// KEY ("" when it has none). Other %name% tokens are Mailgun's own
// variables: %unsubscribe_url% is Postline's unsubscribe link too (the
// tracking fills it in bodies); the rest have no equivalent.
var (
	recipientVarRE = regexp.MustCompile(`%recipient\.([A-Za-z0-9_.-]+)%`)
	otherVarRE     = regexp.MustCompile(`<?%[a-z_]+%>?`)
)

// unsubscribeAliases are Mailgun's unsubscribe variables that mean what
// Postline's %unsubscribe_url% does (the tracking fills it per recipient).
var unsubscribeAliases = strings.NewReplacer("%tag_unsubscribe_url%", "%unsubscribe_url%",
	"%mailing_list_unsubscribe_url%", "%unsubscribe_url%")

// percent substitutes %recipient.KEY% in s.
func percent(s string, vars map[string]any) string {
	if !strings.Contains(s, "%recipient.") {
		return s
	}
	return recipientVarRE.ReplaceAllStringFunc(s, func(m string) string {
		return printValue(vars[m[len("%recipient."):len(m)-1]])
	})
}

// percentSize is at least the length of a recipient's message in
// Mailgun's syntax (the header values and parts), found without building
// it: %recipient.KEY% can print a large value many times over, so the
// message is sized before it is built. Each value is printed once.
func (p personal) percentSize(vars map[string]any) int64 {
	printed := map[string]int{}
	size := func(s string) int64 {
		n := int64(len(s))
		if !strings.Contains(s, "%recipient.") {
			return n
		}
		for _, m := range recipientVarRE.FindAllStringSubmatchIndex(s, -1) {
			key := s[m[2]:m[3]]
			l, ok := printed[key]
			if !ok {
				l = len(printValue(vars[key]))
				printed[key] = l
			}
			n += int64(l - (m[1] - m[0]))
		}
		return n
	}
	n := size(p.src.Subject) + size(p.src.Text) + size(p.src.HTML)
	for k, v := range p.srcHeaders {
		n += int64(len(k)) + size(v)
	}
	return n
}

func printValue(v any) string {
	switch x := v.(type) {
	case nil:
		return ""
	case string:
		return x
	case float64:
		return strconv.FormatFloat(x, 'f', -1, 64)
	case bool:
		return strconv.FormatBool(x)
	default:
		b, _ := json.Marshal(x)
		return string(b)
	}
}

// percentHeader substitutes a header value: line breaks from values become
// spaces (no header can be injected), and Mailgun variables without a
// Postline equivalent are removed with their angle brackets.
func percentHeader(v string, vars map[string]any) string {
	v = percent(v, vars)
	v = otherVarRE.ReplaceAllString(v, "")
	v = strings.Map(func(r rune) rune {
		if unicode.IsControl(r) {
			return ' '
		}
		return r
	}, v)
	return strings.Trim(strings.TrimSpace(v), ", ")
}

// renderPercent is one recipient's message in Mailgun's syntax.
func (p personal) renderPercent(vars map[string]any) (templates.Rendered, map[string]string) {
	out := templates.Rendered{Subject: percent(p.src.Subject, vars), Text: unsubscribeAliases.Replace(percent(p.src.Text, vars)),
		HTML: unsubscribeAliases.Replace(percent(p.src.HTML, vars))}
	headers := make(map[string]string, len(p.srcHeaders))
	for k, v := range p.srcHeaders {
		if strings.EqualFold(k, event.UserVariablesHeader) {
			if j, ok := percentJSON(v, vars); ok {
				headers[k] = j
				continue
			}
		}
		if v = percentHeader(v, vars); v != "" {
			headers[k] = v
		}
	}
	return out, headers
}

// percentJSON substitutes %recipient.KEY% in the strings of a JSON
// document (the user variables, Mailgun's v: values) and encodes it
// again, so a value with quotes or line breaks stays one JSON string. It
// reports false when raw is not JSON.
func percentJSON(raw string, vars map[string]any) (string, bool) {
	if !strings.Contains(raw, "%recipient.") {
		return raw, true
	}
	dec := json.NewDecoder(strings.NewReader(raw))
	dec.UseNumber() // numbers as sent
	var v any
	if dec.Decode(&v) != nil {
		return "", false
	}
	b, err := json.Marshal(percentValue(v, vars))
	if err != nil {
		return "", false
	}
	return string(b), true
}

// percentValue substitutes %recipient.KEY% in every string of v.
func percentValue(v any, vars map[string]any) any {
	switch x := v.(type) {
	case string:
		return percent(x, vars)
	case map[string]any:
		for k, e := range x {
			x[k] = percentValue(e, vars)
		}
	case []any:
		for i, e := range x {
			x[i] = percentValue(e, vars)
		}
	}
	return v
}
