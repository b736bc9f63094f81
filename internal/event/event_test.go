package event_test

import (
	"encoding/json"
	"slices"
	"testing"

	"github.com/postline/postline/internal/event"
)

func TestTypes(t *testing.T) {
	t.Parallel()
	want := []string{"queued", "send", "delivered", "bounced", "failed", "opened", "clicked", "unsubscribed",
		"temporary_fail", "permanent_fail", "deferred", "received", "post"}
	var got []string
	for _, ty := range event.Types() {
		got = append(got, string(ty))
	}
	slices.Sort(got)
	slices.Sort(want)
	if !slices.Equal(got, want) {
		t.Errorf("Types() = %v, want %v", got, want)
	}
	stream := event.StreamTypes()
	if len(stream) != 12 || slices.Contains(stream, event.Send) {
		t.Errorf("StreamTypes() = %v, want the twelve without send", stream)
	}
	for _, c := range []struct {
		typ  event.Type
		want bool
	}{{event.Deferred, true}, {"Deferred", false}, {"", false}, {"sent", false}} {
		if got := c.typ.Valid(); got != c.want {
			t.Errorf("Type(%q).Valid() = %v, want %v", c.typ, got, c.want)
		}
	}
}

func TestNewDetails(t *testing.T) {
	t.Parallel()
	cases := []struct {
		in   map[string]any
		want string
	}{
		{nil, `{}`},
		{map[string]any{}, `{}`},
		{map[string]any{"smtp_code": 250, "url": "https://x.example/?a=1&b=2"}, `{"smtp_code":250,"url":"https://x.example/?a=1\u0026b=2"}`},
		{map[string]any{"bad": make(chan int)}, `{}`},
	}
	for _, c := range cases {
		got := event.NewDetails(c.in)
		if string(got) != c.want || !json.Valid(got) {
			t.Errorf("NewDetails(%v) = %s, want %s", c.in, got, c.want)
		}
	}
}

func TestFold(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]string{"Alice@Example.COM": "alice@example.com", "ÜBER": "über", "ok": "ok"} {
		if got := event.Fold(in); got != want {
			t.Errorf("Fold(%q) = %q, want %q", in, got, want)
		}
	}
}
