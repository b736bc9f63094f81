package message_test

import (
	"strings"
	"testing"

	"github.com/postline/postline/internal/message"
)

func TestNewMessageID(t *testing.T) {
	t.Parallel()
	seen := map[string]bool{}
	for range 1000 {
		id := message.NewMessageID("example.com")
		local, ok := strings.CutSuffix(strings.TrimPrefix(id, "<"), "@example.com>")
		if !ok || !strings.HasPrefix(id, "<") || strings.Count(local, ".") != 1 || len(local) < 30 {
			t.Fatalf("NewMessageID = %q, want <time.random@example.com>", id)
		}
		if seen[id] {
			t.Fatalf("NewMessageID repeated %q", id)
		}
		seen[id] = true
		p := base()
		p.MessageID = id
		if _, err := message.Build(p); err != nil {
			t.Fatalf("Build refuses NewMessageID's %q: %v", id, err)
		}
	}
}
