package mailgun

import (
	"encoding/json"
	"strconv"
	"strings"

	"github.com/postline/postline/internal/event"
)

// Events are Mailgun's event names the log maps to, in the events API's
// `event` filter.
var Events = []string{"accepted", "delivered", "failed", "opened", "clicked", "unsubscribed", "complained"}

// entryDetails are the details fields the Mailgun mapping reads.
type entryDetails struct {
	Reason      string `json:"reason"`
	Stage       string `json:"stage"`
	Source      string `json:"source"`
	Suppression string `json:"suppression"`
	First       bool   `json:"first"`
}

// detailsOf decodes what the mapping reads, only for the types whose
// mapping depends on details: the stats path classifies every entry
// recorded, most of them queued and delivered.
func detailsOf(en event.Entry) entryDetails {
	var d entryDetails
	switch en.Type {
	case event.Bounced, event.Failed, event.Unsubscribed, event.Opened, event.Clicked:
		json.Unmarshal(en.Details, &d) //nolint:errcheck // details are ours
	}
	return d
}

// EventName maps a log entry to Mailgun's event and failure severity;
// "" for entries Mailgun has no event for (send, deferred) or that repeat
// another (a worker's bounced or failed after its permanent_fail).
func EventName(en event.Entry) (name, severity string) {
	return eventName(en, detailsOf(en))
}

func eventName(en event.Entry, d entryDetails) (name, severity string) {
	switch en.Type {
	case event.Queued:
		return "accepted", ""
	case event.Delivered, event.Opened, event.Clicked:
		return string(en.Type), ""
	case event.TemporaryFail:
		return "failed", "temporary"
	case event.PermanentFail:
		return "failed", "permanent"
	case event.Bounced:
		if d.Stage != "" { // the worker's, after its permanent_fail
			return "", ""
		}
		return "failed", "permanent"
	case event.Failed:
		if d.Reason == "permanent_failure" {
			return "", ""
		}
		return "failed", "permanent"
	case event.Unsubscribed:
		if d.Source == "complaint" {
			return "complained", ""
		}
		return "unsubscribed", ""
	}
	return "", ""
}

// Item renders an entry as Mailgun's event object, with its user
// variables (the entry's own, else those of its message's
// X-Mailgun-Variables header).
func Item(en event.Entry, headers map[string]string) map[string]any {
	name, severity := EventName(en)
	var d map[string]any
	json.Unmarshal(en.Details, &d) //nolint:errcheck // details are ours
	tags := []string{}
	for _, t := range strings.Split(en.Tags, ",") {
		if t = strings.TrimSpace(t); t != "" {
			tags = append(tags, t)
		}
	}
	// The entry's own copy first: the copies of a batch share one
	// message id, each with its recipient's variables. Entries recorded
	// without them (a DSN's bounce) take the message's.
	userVars, ok := d["user_variables"].(map[string]any)
	if !ok {
		userVars = map[string]any{}
		json.Unmarshal([]byte(headers[event.UserVariablesHeader]), &userVars) //nolint:errcheck // absent: none
	}
	item := map[string]any{
		"id": strconv.FormatInt(en.ID, 10), "event": name, "timestamp": float64(en.CreatedAt.UnixMicro()) / 1e6,
		"recipient": en.Recipient, "tags": tags, "user-variables": userVars, "log-level": "info",
		"message": map[string]any{"headers": map[string]any{"message-id": en.MessageID, "from": en.Sender, "to": en.Recipient,
			"subject": en.Subject}},
	}
	if _, domain, ok := strings.Cut(en.Recipient, "@"); ok {
		item["recipient-domain"] = domain
	}
	if code, ok := d["smtp_code"]; ok {
		status := map[string]any{"code": code, "message": d["smtp_message"], "enhanced-code": d["enhanced_code"],
			"attempt-no": d["attempt"], "mx-host": d["mx_host"]}
		// Whether the session was encrypted and its certificate verified,
		// from the delivery's TLS outcome (details.tls).
		if t, ok := d["tls"].(map[string]any); ok {
			status["tls"] = t["version"] != nil && t["version"] != ""
			status["certificate-verified"] = t["verified"] == true
		}
		item["delivery-status"] = status
	}
	if name == "failed" {
		item["severity"] = severity
		item["log-level"] = map[string]string{"temporary": "warn", "permanent": "error"}[severity]
		reason := "generic"
		if rsn, ok := d["reason"].(string); ok {
			reason = rsn
		} else if en.Type == event.Bounced || en.Type == event.PermanentFail {
			reason = "bounce"
		}
		item["reason"] = reason
	}
	if url, ok := d["url"]; ok {
		item["url"] = url
	}
	return item
}
