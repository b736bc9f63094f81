package suppression

import (
	"strings"
	"testing"
	"unicode/utf8"
)

func TestBounceReason(t *testing.T) {
	t.Parallel()
	if got := BounceReason("  "); got != nil {
		t.Errorf("BounceReason of blanks = %q, want nil", *got)
	}
	if got := BounceReason("550 5.1.1 no such user\x00\xff"); got == nil || *got != "550 5.1.1 no such user\uFFFD" {
		t.Errorf("BounceReason with a NUL and a bad byte = %v", got)
	}
	long := "550 5.7.1 " + strings.Repeat("é", 2*MaxDescription)
	got := BounceReason(long)
	if got == nil || utf8.RuneCountInString(*got) != MaxDescription || !strings.HasPrefix(*got, "550 5.7.1 éé") || !strings.HasSuffix(*got, "…") {
		t.Errorf("BounceReason of a %d-character reply: %d characters", utf8.RuneCountInString(long), utf8.RuneCountInString(*got))
	}
}
