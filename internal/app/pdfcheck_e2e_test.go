package app_test

import (
	"fmt"
	"runtime"
	"strings"
	"sync"
	"testing"

	"github.com/postline/postline/internal/attach"
	"github.com/postline/postline/internal/store"
	"github.com/postline/postline/internal/testutil/testpdf"
)

// TestPDFChecksStayOutOfTheServer: the checks before a watermarked send is
// accepted parse every PDF and inflate its page content; in the server,
// 4 requests of 20 PDF bombs took +470 MB of its heap. They run in the
// attachment child process: 4 concurrent requests of 5 bombs (each
// inflating to 68 MiB, 1.3 GiB in all) allocate little in the server,
// and each bomb is still refused by name, as in process.
//
// Not parallel: it reads the process's allocation counter, which every
// test of the binary shares.
func TestPDFChecksStayOutOfTheServer(t *testing.T) {
	e := startSend(t, store.SQLite, false, nil)
	bomb := testpdf.Bomb(attach.MaxPDFContentBytes + 4<<20)
	request := func(n int) []part {
		parts := append(basicParts(fmt.Sprintf("r%d@rcpt.example.net", n)),
			part{name: "attachment_options", value: `{"watermark":{"enabled":true,"text":"DRAFT"}}`})
		for i := range 5 {
			parts = append(parts, part{name: "attachments", filename: fmt.Sprintf("bomb%d.pdf", i), contentType: "application/pdf", value: string(bomb)})
		}
		return parts
	}
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	var wg sync.WaitGroup
	for n := range 4 {
		wg.Go(func() {
			resp := e.send(t, request(n), nil)
			errs, _ := resp.JSON["errors"].(map[string]any)
			got := fmt.Sprint(errs["attachments"])
			if resp.StatusCode != 422 || strings.Count(got, "decompresses to more than 64 MiB") != 5 || !strings.Contains(got, `"bomb4.pdf"`) {
				t.Errorf("request %d: %d %.500s", n, resp.StatusCode, resp.Body)
			}
		})
	}
	wg.Wait()
	runtime.ReadMemStats(&after)
	allocated := after.TotalAlloc - before.TotalAlloc
	t.Logf("the server allocated %d MiB checking 20 PDF bombs of %d KiB", allocated>>20, len(bomb)>>10)
	if allocated > 256<<20 {
		t.Errorf("the server allocated %d MiB checking the bombs, want under 256 MiB (they inflate to 1.3 GiB)", allocated>>20)
	}
}
