package bounce

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"testing"
)

func FuzzParse(f *testing.F) {
	files, _ := filepath.Glob("testdata/*.eml")
	for _, name := range files {
		b, err := os.ReadFile(name)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	f.Add([]byte("Content-Type: multipart/report; boundary=x\n\n--x\nContent-Type: message/delivery-status\n\nFinal-Recipient: a@b.c\n"))
	f.Fuzz(func(t *testing.T, in []byte) {
		const limit = 64 << 10
		got, err := Parse(bytes.NewReader(in), limit)
		if len(in) > limit {
			if !errors.Is(err, ErrTooLarge) {
				t.Fatalf("Parse(%d bytes) error = %v, want ErrTooLarge", len(in), err)
			}
			return
		}
		if err != nil || got == nil {
			t.Fatalf("Parse: %v, %v; want a non-nil slice and no error", got, err)
		}
		if len(got) > MaxRecipients {
			t.Fatalf("Parse: %d reports, want at most %d", len(got), MaxRecipients)
		}
		for _, r := range got {
			switch r.Kind {
			case KindPermanent, KindTemporary, KindComplaint, KindUnknown:
			default:
				t.Fatalf("Parse: Kind %q", r.Kind)
			}
			for _, s := range []string{r.Recipient, r.Status, r.DiagnosticCode, r.RemoteMTA, r.OriginalMessageID, r.FeedbackType} {
				if len(s) > MaxFieldLen {
					t.Fatalf("Parse: field of %d bytes, want at most %d", len(s), MaxFieldLen)
				}
			}
		}
	})
}
