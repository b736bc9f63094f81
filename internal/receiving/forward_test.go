package receiving

import (
	"context"
	"testing"

	"github.com/postline/postline/internal/inboundroute"
)

type recordingForwarder struct {
	got     []inboundroute.Action
	outcome string
}

func (r *recordingForwarder) Forward(_ context.Context, h Handoff) ([]ActionOutcome, error) {
	r.got = append(r.got, h.Actions...)
	out := make([]ActionOutcome, len(h.Actions))
	for i := range out {
		out[i] = ActionOutcome{Outcome: r.outcome}
	}
	return out, nil
}

// Each side sees only its own kind, and the outcomes come back in the
// order the routes asked, a missing side answering "unsupported".
func TestForwardersSplitsByKindAndKeepsOrder(t *testing.T) {
	url := &recordingForwarder{outcome: "queued-url"}
	h := Handoff{Actions: []inboundroute.Action{
		{Kind: inboundroute.KindForward, Address: "a@example.org"},
		{Kind: inboundroute.KindForward, URL: "https://hooks.example/in"},
		{Kind: inboundroute.KindStore, Notify: "https://hooks.example/stored"},
		{Kind: inboundroute.KindForward, Address: "b@example.org"},
	}}
	out, err := Forwarders{URL: url}.Forward(context.Background(), h)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{OutcomeUnsupported, "queued-url", "queued-url", OutcomeUnsupported}
	for i, w := range want {
		if out[i].Outcome != w {
			t.Errorf("action %d: outcome %q, want %q", i, out[i].Outcome, w)
		}
	}
	if len(url.got) != 2 || url.got[0].URL == "" || url.got[1].Notify == "" {
		t.Errorf("URL side got %+v, want the URL forward and the notification", url.got)
	}
	addr := &recordingForwarder{outcome: "queued-address"}
	out, _ = Forwarders{URL: url, Address: addr}.Forward(context.Background(), h)
	if out[0].Outcome != "queued-address" || out[3].Outcome != "queued-address" || len(addr.got) != 2 {
		t.Errorf("address side: outcomes %+v, got %+v", out, addr.got)
	}
}
