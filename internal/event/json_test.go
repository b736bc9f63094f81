package event

import (
	"bytes"
	"encoding/json"
	"math/rand/v2"
	"testing"
	"time"
)

// appendJSONString must agree with encoding/json (without HTML escaping).
func TestAppendJSONString(t *testing.T) {
	t.Parallel()
	cases := []string{"", "plain", `quote " and \ backslash`, "tab\tnew\nline\rcr", "\x00\x01\x1f\x7f", "<a href='x'>&</a>",
		"ünïcödé ✉ 🚀", "bad \xff\xfe utf8", "line\u2028sep\u2029para", "\xed\xa0\x80 surrogate"}
	rng := rand.New(rand.NewPCG(1, 1))
	for i := 0; i < 2000; i++ {
		b := make([]byte, rng.IntN(12))
		for j := range b {
			b[j] = byte(rng.IntN(256))
		}
		cases = append(cases, string(b))
	}
	for _, s := range cases {
		var want bytes.Buffer
		enc := json.NewEncoder(&want)
		enc.SetEscapeHTML(false)
		enc.Encode(s)
		if got := appendJSONString(nil, s); string(got) != string(bytes.TrimSuffix(want.Bytes(), []byte("\n"))) {
			t.Errorf("appendJSONString(%q) = %s, want %s", s, got, want.Bytes())
		}
	}
}

func TestAppendEntry(t *testing.T) {
	t.Parallel()
	e := Entry{ID: 42, MessageID: "<m@x>", Type: Bounced, Sender: "a@x", Recipient: "b@y", Subject: `Say "hi"`,
		CreatedAt: time.Date(2026, 11, 21, 10, 0, 0, 5e6, time.FixedZone("", 3600)), Details: json.RawMessage(`{"smtp_code":550}`)}
	want := `{"id":42,"message_id":"<m@x>","event_type":"bounced","sender":"a@x","recipient":"b@y","subject":"Say \"hi\"",` +
		`"tags":null,"created_at":"2026-11-21T09:00:00.005Z","details":{"smtp_code":550}}`
	if got := string(AppendJSON(nil, e)); got != want {
		t.Errorf("appendEntry = %s\nwant          %s", got, want)
	}
	e.Tags, e.Details = "a,b", nil
	var v map[string]any
	if err := json.Unmarshal(AppendJSONArray(nil, []Entry{e})[1:], &v); err == nil {
		t.Errorf("appendEntries is not an array")
	}
	if err := json.Unmarshal(AppendJSON(nil, e), &v); err != nil || v["tags"] != "a,b" || v["details"] == nil {
		t.Errorf("appendEntry with tags = %v, %v", v, err)
	}
}
