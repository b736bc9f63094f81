package hostile

import (
	"bytes"
	"context"
	"fmt"
	"mime/multipart"
	"strings"
	"testing"
)

// TestBigListUpload (finding 9): mallory uploads a list-cleaning file of
// many lines (1,000,000 in the finding). Its lines are inserted in chunks
// with the writer released between them, so alice's sends commit during
// the insertion; a fourth unfinished job is refused with 429.
func TestBigListUpload(t *testing.T) {
	t.Parallel()
	r := newRig(t, nil)
	r.start()
	lines := scale(200000, 1000000)
	var list bytes.Buffer
	for i := 0; i < lines; i++ {
		fmt.Fprintf(&list, "user%d@%s\n", i, rcptDomain)
	}
	upload := func() (int, string) {
		var buf bytes.Buffer
		mw := multipart.NewWriter(&buf)
		fw, _ := mw.CreateFormFile("file", "list.txt")
		fw.Write(list.Bytes())
		mw.Close()
		code, body, err := r.api(attacker, "POST", "/api/email/validate/jobs", mw.FormDataContentType(), &buf)
		if err != nil {
			t.Errorf("upload: %v", err)
		}
		return code, string(body)
	}
	r.underAttack(bounds{MaxRSSMiB: 400}, func(ctx context.Context) {
		if code, body := upload(); code != 202 {
			t.Errorf("first upload: %d %s", code, body)
		}
	})
	for i := 2; i <= 3; i++ {
		if code, body := upload(); code != 202 {
			t.Fatalf("upload %d: %d %s", i, code, body)
		}
	}
	if code, body := upload(); code != 429 || !strings.Contains(body, "validation-jobs-per-account") {
		t.Errorf("a fourth unfinished job: %d %s; want 429 naming --validation-jobs-per-account", code, body)
	}
}
