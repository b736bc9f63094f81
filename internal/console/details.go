package console

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"time"
)

// detailField is one labelled value of a log entry's details.
type detailField struct{ Label, Value string }

// detailLabels name the details' keys as a reader says them; detailOrder
// puts the telling ones first (the rest follow by name).
var (
	detailLabels = map[string]string{
		"smtp_code": "SMTP code", "enhanced_code": "Enhanced code", "smtp_message": "SMTP reply", "mx_host": "Server",
		"stage": "Stage", "attempt": "Attempt", "attempts": "Attempts", "next_attempt_at": "Next attempt",
		"reason": "Reason", "url": "Link", "user_agent": "User agent", "ip": "IP address", "via": "Via",
		"tls": "TLS", "tls.version": "TLS version", "tls.verified": "Certificate verified", "tls.policy": "TLS policy",
		"user-variables": "User variables", "suppression": "Suppression", "suppressed_by": "Suppressed by",
		"diagnostic_code": "Diagnostic code", "remote_mta": "Remote server", "feedback_type": "Feedback type",
		"reported_recipient": "Reported recipient", "status": "Status", "source": "Source", "from": "From",
	}
	detailOrder = []string{"reason", "smtp_code", "enhanced_code", "smtp_message", "mx_host", "stage", "attempt", "attempts",
		"next_attempt_at", "tls"}
)

// detailFields turns a log entry's details (a JSON object) into labelled
// fields; a nested object's fields follow, each labelled with its parent
// (TLS version ...). Anything that is not an object is one field.
func detailFields(raw json.RawMessage) []detailField {
	var m map[string]any
	if err := json.Unmarshal(raw, &m); err != nil {
		if len(raw) == 0 || string(raw) == "null" {
			return nil
		}
		return []detailField{{Label: "Details", Value: string(raw)}}
	}
	var out []detailField
	add := func(key string, v any) {
		if v != nil && v != "" { // nothing to say
			out = append(out, detailField{Label: detailLabel(key), Value: detailValue(key, v)})
		}
	}
	for _, k := range detailKeys(m) {
		if sub, ok := m[k].(map[string]any); ok {
			for _, sk := range detailKeys(sub) {
				add(k+"."+sk, sub[sk])
			}
			continue
		}
		add(k, m[k])
	}
	return out
}

func detailKeys(m map[string]any) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	rank := func(k string) int {
		if i := slices.Index(detailOrder, k); i >= 0 {
			return i
		}
		return len(detailOrder)
	}
	slices.SortFunc(keys, func(a, b string) int {
		if ra, rb := rank(a), rank(b); ra != rb {
			return ra - rb
		}
		return strings.Compare(a, b)
	})
	return keys
}

func detailLabel(key string) string {
	if l, ok := detailLabels[key]; ok {
		return l
	}
	parent, k, nested := strings.Cut(key, ".")
	if nested {
		return detailLabel(parent) + " " + strings.ReplaceAll(k, "_", " ")
	}
	k = strings.ReplaceAll(key, "_", " ")
	return strings.ToUpper(k[:1]) + k[1:]
}

func detailValue(key string, v any) string {
	switch x := v.(type) {
	case bool:
		if x {
			return "yes"
		}
		return "no"
	case float64:
		if x == float64(int64(x)) {
			return fmt.Sprint(int64(x)) // codes and attempts: no separators
		}
		return fmt.Sprint(x)
	case string:
		if strings.HasSuffix(key, "_at") {
			if t, err := time.Parse(time.RFC3339Nano, x); err == nil {
				return t.UTC().Format("2006-01-02 15:04:05 UTC")
			}
		}
		return x
	}
	b, _ := json.Marshal(v)
	return string(b)
}
