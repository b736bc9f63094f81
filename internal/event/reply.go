package event

import (
	"encoding/json"
	"strconv"
	"strings"
)

// Reply is the receiving server's answer an entry records, if any: from a
// delivery attempt (details smtp_code, enhanced_code, smtp_message) or
// from a delivery status notification (details status, diagnostic_code,
// RFC 3464 §2.3.4 and §2.3.6). The zero Reply means the entry has none.
type Reply struct {
	Code     int    // the SMTP reply code (550); 0 when not known
	Enhanced string // the enhanced status code (5.1.1, RFC 3463); "" when not known
	Text     string // the reply's text or the DSN's diagnostic code
}

// String is the reply as a reader says it: "550 5.1.1 no such user",
// without repeating codes the text already starts with.
func (r Reply) String() string {
	var parts []string
	text := strings.TrimSpace(r.Text)
	if r.Code != 0 && !strings.HasPrefix(text, strconv.Itoa(r.Code)) {
		parts = append(parts, strconv.Itoa(r.Code))
	}
	if r.Enhanced != "" && !strings.Contains(text, r.Enhanced) {
		parts = append(parts, r.Enhanced)
	}
	if text != "" {
		parts = append(parts, text)
	}
	return strings.Join(parts, " ")
}

// Reply returns the answer e's details record; entries without one (a
// queued or opened entry, a failure before any server answered) give the
// zero Reply.
func (e Entry) Reply() Reply {
	if len(e.Details) == 0 || !strings.Contains(string(e.Details), `"smtp_`) && !strings.Contains(string(e.Details), `"diagnostic_code"`) {
		return Reply{} // most entries: no decoding
	}
	var d struct {
		Code       json.Number `json:"smtp_code"`
		Enhanced   string      `json:"enhanced_code"`
		Message    string      `json:"smtp_message"`
		Status     string      `json:"status"`
		Diagnostic string      `json:"diagnostic_code"`
	}
	if json.Unmarshal(e.Details, &d) != nil {
		return Reply{}
	}
	code, _ := strconv.Atoi(d.Code.String())
	r := Reply{Code: code, Enhanced: d.Enhanced, Text: d.Message}
	if r.Text == "" && d.Diagnostic != "" {
		// "smtp; 550 5.1.1 <x@example.net>: user unknown" (RFC 3464 §2.3.6)
		r.Enhanced, r.Text = d.Status, strings.TrimSpace(d.Diagnostic)
		if typ, rest, ok := strings.Cut(r.Text, ";"); ok && strings.EqualFold(strings.TrimSpace(typ), "smtp") {
			r.Text = strings.TrimSpace(rest)
		}
		if len(r.Text) >= 3 {
			r.Code, _ = strconv.Atoi(r.Text[:3])
		}
	}
	if r.Code < 200 || r.Code > 599 {
		r.Code = 0
	}
	return r
}
